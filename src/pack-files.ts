// The files --watch follows for a pack, and what they look like on disk now. Every source file
// under the module root counts, not only the ones the pack is known to load: pack code loads
// in other processes (a warm group's, or one per strict call, even lazily inside a handler), so
// the front cannot see what they import; a save of a file nothing imports costs one reload.
import { closeSync, constants, type Dirent, fstatSync, openSync, readdirSync, readlinkSync, readSync, realpathSync, statSync } from 'node:fs'
import { extname, join, relative, sep } from 'node:path'

/** What a module can be, or import (JSON modules and the package.json "type" included). */
const SOURCE_EXTENSIONS = new Set(['.js', '.mjs', '.cjs', '.ts', '.mts', '.cts', '.json'])
/** Bounds on one walk: a module root pointed at a large tree must not stall the front. */
export const MAX_FILES = 5_000
export const MAX_DIRS = 500
/** Bound on the text readSources holds (sent to every strict process with --watch). */
export const MAX_SOURCE_BYTES = 32 * 1024 * 1024

export type PackTree = {
  /** Folders under the root (the root first), each to be watched for events. */
  dirs: string[]
  /** Source files under them, then the extra files asked for, sorted. */
  files: string[]
  /** The walk stopped at MAX_FILES or MAX_DIRS. */
  truncated: boolean
}

/** Not descended into: installed packages (a `npm install` is thousands of files) and dot folders (.git, editors' state). */
function skipped(name: string): boolean {
  return name === 'node_modules' || name.startsWith('.')
}

/**
 * Walks `root` breadth first, within the bounds. A folder it cannot read is left out, not an
 * error: a file that cannot be seen cannot be loaded either. Links to files are followed by
 * the stat; links to folders are not descended into (a loop would never end).
 */
export function walkPackTree(root: string, extra: readonly string[] = []): PackTree {
  const dirs: string[] = []
  const files = new Set<string>(extra)
  let truncated = false
  const queue = [root]
  while (queue.length > 0 && !truncated) {
    const dir = queue.shift() as string
    if (dirs.length >= MAX_DIRS) {
      truncated = true
      break
    }
    let names: Dirent[]
    try {
      names = readdirSync(dir, { withFileTypes: true })
    } catch {
      continue
    }
    dirs.push(dir)
    for (const entry of names) {
      if (skipped(entry.name)) continue
      const path = join(dir, entry.name)
      if (entry.isDirectory()) queue.push(path)
      else if ((entry.isFile() || entry.isSymbolicLink()) && SOURCE_EXTENSIONS.has(extname(entry.name))) {
        if (files.size >= MAX_FILES + extra.length) {
          truncated = true
          break
        }
        files.add(path)
      }
    }
  }
  return { dirs, files: [...files].sort(), truncated }
}

/**
 * Every file of a pack: the walk of its module root, plus its modules wherever they are and
 * the bundle map, which the walk's rules may not reach.
 */
export function packFileList(moduleRoot: string, modules: readonly string[], bundleMap: string | undefined): string[] {
  return walkPackTree(moduleRoot, bundleMap === undefined ? modules : [...modules, bundleMap]).files
}

/** Each file's inode, size and modification time ('missing' when it is gone): a save changes one of them. */
export type FileStamps = ReadonlyMap<string, string>

export function stampFiles(files: readonly string[]): FileStamps {
  const stamps = new Map<string, string>()
  for (const file of files) {
    try {
      const now = statSync(file)
      stamps.set(file, `${now.ino}:${now.size}:${now.mtimeMs}`)
    } catch {
      stamps.set(file, 'missing')
    }
  }
  return stamps
}

/** One string for a set of stamps: equal when no file was saved, added or removed. */
export function stampsKey(stamps: FileStamps): string {
  let key = ''
  for (const [file, stamp] of stamps) key += `${file}\0${stamp}\n`
  return key
}

/** The files that differ between two stamp sets (saved, added or removed), relative to `root`, sorted. */
export function changedFiles(before: FileStamps, after: FileStamps, root: string): string[] {
  const changed = new Set<string>()
  for (const [file, stamp] of after) if (before.get(file) !== stamp) changed.add(file)
  for (const file of before.keys()) if (!after.has(file)) changed.add(file)
  return [...changed].map((file) => relative(root, file) || file).sort()
}

/**
 * The text of each file, by absolute path, as a boot reads the pack (with --watch, for strict
 * processes to load instead of the disk: workers/pinned-sources.ts). Only a regular file that
 * lies within `roots` (what a strict process may read itself: strict-flags.ts readableRoots)
 * once its links are resolved: the front reads as the service's user, outside every wall, and a
 * pack's link to /proc/self/environ gave strict calls the front's environment, token included,
 * and a link to a FIFO stalled the front (a red-team pass, stop 38). A file left out, or past
 * MAX_SOURCE_BYTES in all, loads from disk as ever, behind the strict process's own walls.
 */
export function readSources(files: readonly string[], roots: readonly string[]): Record<string, string> {
  const sources: Record<string, string> = {}
  let room = MAX_SOURCE_BYTES
  for (const file of files) {
    const text = readWithin(file, roots, room)
    if (text === undefined) continue
    room -= Buffer.byteLength(text)
    sources[file] = text
  }
  return sources
}

/** `file`'s text, when it is a regular file within `roots` of at most `room` bytes. */
function readWithin(file: string, roots: readonly string[], room: number): string | undefined {
  const within = (path: string | undefined) =>
    path !== undefined && roots.some((root) => path === root || path.startsWith(root.endsWith(sep) ? root : `${root}${sep}`))
  let fd: number
  try {
    // Checked before it is opened (opening a device may do something), and after, by what was opened.
    if (!within(realpathSync.native(file))) return undefined
    fd = openSync(file, constants.O_RDONLY | constants.O_NONBLOCK | constants.O_NOCTTY)
  } catch {
    return undefined // gone or unreadable: the loader will say so, if anything imports it
  }
  try {
    const opened = fstatSync(fd)
    const path = openedPath(fd) ?? realpathSync.native(file)
    if (!opened.isFile() || opened.size > room || !within(path)) return undefined
    // The path the kernel gives is that file's own: not a file since unlinked, whose path is
    // given as "<path> (deleted)", which a file of that name may stand beside (a second red-team pass).
    const named = statSync(path)
    if (named.dev !== opened.dev || named.ino !== opened.ino) return undefined
    const text = Buffer.allocUnsafe(opened.size)
    let read = 0
    while (read < opened.size) {
      const n = readSync(fd, text, read, opened.size - read, read)
      if (n === 0) break
      read += n
    }
    return text.toString('utf8', 0, read)
  } catch {
    return undefined
  } finally {
    closeSync(fd)
  }
}

/** The path of what `fd` is open on, from the kernel (Linux); undefined where it cannot say. */
function openedPath(fd: number): string | undefined {
  try {
    return readlinkSync(`/proc/self/fd/${fd}`)
  } catch {
    return undefined
  }
}
