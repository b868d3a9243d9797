// `--bundle-map FILE`, as the publisher's service takes it: a JSON object of the index's source
// paths → bundle paths relative to the module root, so an image can serve bundles for an
// index that names sources. A module the map covers loads from its bundle; one it does not
// resolves as named. Read at every boot (and so at every --watch reload).
import { readFileSync } from 'node:fs'
import { posix } from 'node:path'

export type BundleMap = ReadonlyMap<string, string>

export type BundleMapResult = { kind: 'ok'; map: BundleMap } | { kind: 'error'; problem: string }

const SHAPE = 'must be a JSON object of source path → bundle path (strings, relative to the module root)'

/** `./tools/a.ts` and `tools/a.ts` name the same module. */
function key(path: string): string {
  return posix.normalize(path.replaceAll('\\', '/'))
}

export function readBundleMap(file: string): BundleMapResult {
  let parsed: unknown
  try {
    parsed = JSON.parse(readFileSync(file, 'utf8'))
  } catch (err) {
    return { kind: 'error', problem: `--bundle-map ${file} cannot be read (${(err as Error).message}): it ${SHAPE}` }
  }
  if (typeof parsed !== 'object' || parsed === null || Array.isArray(parsed)) {
    return { kind: 'error', problem: `--bundle-map ${file} is not an object: it ${SHAPE}` }
  }
  const map = new Map<string, string>()
  for (const [source, bundle] of Object.entries(parsed)) {
    if (typeof bundle !== 'string' || bundle === '') {
      return { kind: 'error', problem: `--bundle-map ${file}: "${source}" maps to ${JSON.stringify(bundle)}, not a path: the map ${SHAPE}` }
    }
    map.set(key(source), bundle)
  }
  return { kind: 'ok', map }
}

/** The path to load for a module path of the index: its bundle if the map has one. */
export function bundleOf(map: BundleMap | undefined, modulePath: string): string | undefined {
  return map?.get(key(modulePath))
}
