// Under the strict posture a handler may write only in its own ctx.tmpDir (docs/spec/CONTRACT.md §6).
// With KINDGI_PACK_SANDBOX=strict the permission model enforces that for the whole process;
// for a tool that is strict on its own, this patch of node:fs is the guard (not a wall: a
// symlink planted inside tmpDir, or a native addon, gets past it). See docs/security.md.
import { createRequire, syncBuiltinESMExports } from 'node:module'
import { resolve, sep } from 'node:path'
import { fileURLToPath } from 'node:url'

const require = createRequire(import.meta.url)

let allowed: string | undefined
let tool = '(loading)'

/** The folder the running call may write in (undefined: none). */
export function setWritableFolder(id: string, folder: string | undefined): void {
  tool = id
  allowed = folder
}

function pathOf(value: unknown): string | undefined {
  if (typeof value === 'string') return resolve(value)
  if (value instanceof URL) return resolve(fileURLToPath(value))
  if (Buffer.isBuffer(value)) return resolve(value.toString())
  return undefined // a file descriptor: it was checked when it was opened
}

function check(value: unknown, what: string): void {
  const path = pathOf(value)
  if (path === undefined) return
  if (allowed !== undefined && (path === allowed || path.startsWith(allowed + sep))) return
  const err = new Error(
    `ERR_PACK_WRITE_DENIED: tool "${tool}" runs under the strict posture and may write only in ctx.tmpDir (${what} ${path} refused)`,
  ) as Error & { code: string }
  err.code = 'ERR_PACK_WRITE_DENIED'
  throw err
}

function writesFlags(flags: unknown): boolean {
  if (typeof flags === 'number') return (flags & 3) !== 0 || (flags & 0o100) !== 0 // O_WRONLY/O_RDWR or O_CREAT
  return typeof flags === 'string' && /[wa+]/.test(flags)
}

/** Names of path-taking writers and which arguments are the paths written to. */
const WRITERS: Record<string, number[]> = {
  writeFile: [0],
  appendFile: [0],
  mkdir: [0],
  mkdtemp: [0],
  rm: [0],
  rmdir: [0],
  unlink: [0],
  rename: [0, 1],
  copyFile: [1],
  cp: [1],
  symlink: [1],
  link: [1],
  truncate: [0],
  chmod: [0],
  lchmod: [0],
  chown: [0],
  lchown: [0],
  utimes: [0],
  lutimes: [0],
  createWriteStream: [0],
}

function guard(target: Record<string, unknown>, name: string, paths: number[]): void {
  const original = target[name]
  if (typeof original !== 'function') return
  const wrapped = function (this: unknown, ...args: unknown[]) {
    for (const i of paths) check(args[i], name)
    return (original as (...a: unknown[]) => unknown).apply(this, args)
  }
  Object.defineProperty(target, name, { value: wrapped, writable: true, configurable: true, enumerable: true })
}

function guardOpen(target: Record<string, unknown>, name: string): void {
  const original = target[name]
  if (typeof original !== 'function') return
  const wrapped = function (this: unknown, ...args: unknown[]) {
    if (writesFlags(args[1])) check(args[0], name)
    return (original as (...a: unknown[]) => unknown).apply(this, args)
  }
  Object.defineProperty(target, name, { value: wrapped, writable: true, configurable: true, enumerable: true })
}

export function installWriteGuard(): void {
  const fs = require('node:fs') as Record<string, unknown>
  const promises = fs.promises as Record<string, unknown>
  for (const [name, paths] of Object.entries(WRITERS)) {
    guard(fs, name, paths)
    guard(fs, `${name}Sync`, paths)
    guard(promises, name, paths)
  }
  guardOpen(fs, 'open')
  guardOpen(fs, 'openSync')
  guardOpen(promises, 'open')
  syncBuiltinESMExports()
}
