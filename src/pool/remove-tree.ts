// Removing a folder and all in it, synchronously, whatever is in it: the one way the service
// (and its tests) remove a tree. Run on remove-folder.ts's thread for a call's folder, on the
// front's own thread only as the process exits (call-tmp.ts).
// On Linux, by descriptors (removeByDescriptors): a call's folder is open to other processes of
// the service's user while it is removed, and one (a warm tool's child) swapped a folder on
// the walk's path for a link to the temporary folder, so that the walk's chmod of
// "<call>/a/<root's name>" made the strict calls' root 0700 (a red-team pass, stop 37). Each
// folder is opened without following a link, and everything after is done through
// /proc/self/fd/<its descriptor>: to the folder held, whatever its path leads to meanwhile.
// Elsewhere (no /proc), by paths, as follows.
// First Node's own removal, which walks the tree in C++. When that leaves the folder, a walk of
// our own: pack code may have taken its own permissions away (a sub-folder made 0500, which a
// service without CAP_DAC_OVERRIDE cannot empty as it is), and Node's recursive rmSync gives
// up without a word when something else removes an entry beneath it meanwhile (the spawner a
// call's folder while the front removes their root; every time in a test of two threads). The
// walk gives every folder back its owner's permissions, never follows a link, and takes each
// entry on its own, one already gone being no error. It works by paths, so it keeps them short:
// a folder deep in the tree is moved up to the top before its entries are walked. Pack code can
// make a tree deeper than the kernel takes a path (PATH_MAX) without ever naming such a path
// (renaming one deep chain of folders to the bottom of another); the walk met ENAMETOOLONG
// there, and the call's files stayed for good (a red-team pass, stop 35).
import { chmodSync, closeSync, constants, existsSync, fstatSync, lstatSync, openSync, readdirSync, renameSync, rmdirSync, rmSync, unlinkSync } from 'node:fs'

/** Past this many characters a folder's path is moved up before its entries are walked (a name adds at most 255). */
const SHALLOW_CHARS = 2048
/** Past this many folders held open at once, a folder is moved up to the top and walked from there. */
const DEEP_FOLDERS = 64
/** Linux's O_PATH: a descriptor that names a file without opening it for reading, whatever its mode. */
const O_PATH = 0o10000000
const BY_DESCRIPTORS = process.platform === 'linux' && existsSync('/proc/self/fd')

export type Removal = { kind: 'ok' } | { kind: 'error'; message: string }

export function removeTree(folder: string): Removal {
  try {
    if (BY_DESCRIPTORS) removeByDescriptors(folder)
    else removeByPaths(folder)
  } catch (err) {
    return { kind: 'error', message: (err as Error).message }
  }
  return existsSync(folder) ? { kind: 'error', message: 'something made new entries in it as it was removed' } : { kind: 'ok' }
}

function removeByPaths(folder: string): void {
  try {
    rmSync(folder, { recursive: true, force: true })
  } catch {
    // walked below
  }
  if (existsSync(folder)) removeEach(folder)
}

/** What a descriptor names, as a path that leads to it and nowhere else. */
function held(fd: number): string {
  return `/proc/self/fd/${fd}`
}

/** `name` in the folder held by `folderFd`, opened without following a link; undefined when it is gone. */
function openEntry(folderFd: number, name: string): number | undefined {
  return unlessGone(() => openSync(`${held(folderFd)}/${name}`, O_PATH | constants.O_NOFOLLOW))
}

function removeByDescriptors(folder: string): void {
  const top = unlessGone(() => openSync(folder, O_PATH | constants.O_NOFOLLOW))
  if (top === undefined) return
  try {
    if (!fstatSync(top).isDirectory()) {
      unlessGone(() => unlinkSync(folder))
      return
    }
    const spare = freeNames(held(top))
    // Folders moved up land in the top: walk it again until a walk moves nothing up.
    let again = true
    while (again) again = emptyHeld(top, 0, spare)
  } finally {
    closeSync(top)
  }
  unlessGone(() => rmdirSync(folder))
}

/** Empties the folder `fd` holds; true when a folder too deep was moved up to the top instead. */
function emptyHeld(fd: number, depth: number, spare: () => string): boolean {
  let movedUp = false
  // Its owner's permissions back (pack code may have taken them away), on the folder held.
  chmodSync(held(fd), 0o700)
  for (const name of unlessGone(() => readdirSync(held(fd))) ?? []) {
    const entry = openEntry(fd, name)
    if (entry === undefined) continue
    const path = `${held(fd)}/${name}`
    try {
      if (!fstatSync(entry).isDirectory()) unlessGone(() => unlinkSync(path))
      else if (depth + 1 >= DEEP_FOLDERS) {
        chmodSync(held(entry), 0o700)
        unlessGone(() => renameSync(path, spare()))
        movedUp = true
      } else {
        movedUp = emptyHeld(entry, depth + 1, spare) || movedUp
        unlessGone(() => rmdirSync(path))
      }
    } finally {
      closeSync(entry)
    }
  }
  return movedUp
}

function removeEach(root: string): void {
  const stack = [{ path: root, emptied: false }]
  const spare = freeNames(root)
  for (let at = stack.pop(); at !== undefined; at = stack.pop()) {
    const stat = unlessGone(() => lstatSync(at.path))
    if (stat === undefined) continue
    if (!stat.isDirectory()) unlessGone(() => unlinkSync(at.path))
    else if (at.emptied) unlessGone(() => rmdirSync(at.path))
    else {
      // Write permission on a folder is what moving it to another parent needs, too.
      unlessGone(() => chmodSync(at.path, 0o700))
      const path = at.path.length > SHALLOW_CHARS ? movedUp(at.path, spare()) : at.path
      if (path === undefined) continue // gone meanwhile
      stack.push({ path, emptied: true })
      for (const name of unlessGone(() => readdirSync(path)) ?? []) stack.push({ path: `${path}/${name}`, emptied: false })
    }
  }
}

/** Names at the top of the tree that nothing there has yet. */
function freeNames(root: string): () => string {
  let next = 0
  return () => {
    let name = `${root}/.removing-${next++}`
    while (unlessGone(() => lstatSync(name)) !== undefined) name = `${root}/.removing-${next++}`
    return name
  }
}

/** `path` renamed to `to`; undefined when it is gone. */
function movedUp(path: string, to: string): string | undefined {
  const renamed = unlessGone(() => {
    renameSync(path, to)
    return true
  })
  return renamed === undefined ? undefined : to
}

function unlessGone<T>(act: () => T): T | undefined {
  try {
    return act()
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === 'ENOENT') return undefined
    throw err
  }
}
