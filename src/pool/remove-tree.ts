// Removing a folder and all in it, synchronously, whatever is in it: the one way the service
// (and its tests) remove a tree. Run on remove-folder.ts's thread for a call's folder, on the
// front's own thread only as the process exits (call-tmp.ts).
// First Node's own removal, which walks the tree in C++. When that leaves the folder, a walk of
// our own: pack code may have taken its own permissions away (a sub-folder made 0500, which a
// service without CAP_DAC_OVERRIDE cannot empty as it is), and Node's recursive rmSync gives
// up without a word when something else removes an entry beneath it meanwhile (the spawner a
// call's folder while the front removes their root; every time in a test of two threads). The
// walk gives every folder back its owner's permissions, never follows a link, and takes each
// entry on its own, one already gone being no error.
import { chmodSync, existsSync, lstatSync, readdirSync, rmdirSync, rmSync, unlinkSync } from 'node:fs'

export type Removal = { kind: 'ok' } | { kind: 'error'; message: string }

export function removeTree(folder: string): Removal {
  try {
    rmSync(folder, { recursive: true, force: true })
  } catch {
    // walked below
  }
  if (!existsSync(folder)) return { kind: 'ok' }
  try {
    removeEach(folder)
  } catch (err) {
    return { kind: 'error', message: (err as Error).message }
  }
  return existsSync(folder) ? { kind: 'error', message: 'something made new entries in it as it was removed' } : { kind: 'ok' }
}

function removeEach(root: string): void {
  const stack = [{ path: root, emptied: false }]
  for (let at = stack.pop(); at !== undefined; at = stack.pop()) {
    const path = at.path
    const stat = unlessGone(() => lstatSync(path))
    if (stat === undefined) continue
    if (!stat.isDirectory()) unlessGone(() => unlinkSync(path))
    else if (at.emptied) unlessGone(() => rmdirSync(path))
    else {
      unlessGone(() => chmodSync(path, 0o700))
      stack.push({ path, emptied: true })
      for (const name of unlessGone(() => readdirSync(path)) ?? []) stack.push({ path: `${path}/${name}`, emptied: false })
    }
  }
}

function unlessGone<T>(act: () => T): T | undefined {
  try {
    return act()
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === 'ENOENT') return undefined
    throw err
  }
}
