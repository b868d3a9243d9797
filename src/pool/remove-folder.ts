// Removes a strict call's folder (ctx.tmpDir) whatever its call left in it. Pack code owns what
// it made there and may take its own write permission away (a sub-folder made 0500): a service
// without CAP_DAC_OVERRIDE, as the image's user is, then cannot unlink what is inside, and the
// removal threw in the spawner, which ended with every strict call in flight (stop 29). So the
// walk gives every folder of the tree back its owner's permissions first, never following a
// link, and a removal that still fails is a value, never a throw.
import { chmodSync, lstatSync, readdirSync, rmdirSync, rmSync } from 'node:fs'

export type Removal = { kind: 'ok' } | { kind: 'error'; message: string }

export function removeFolder(folder: string): Removal {
  try {
    // Most calls leave their folder empty: one rmdir, and the walks only for the rest.
    rmdirSync(folder)
    return { kind: 'ok' }
  } catch {
    // not empty, or not removable as it is
  }
  try {
    rmSync(folder, { recursive: true, force: true })
    return { kind: 'ok' }
  } catch {
    // a folder inside that its call made read-only: give them back, then again
  }
  try {
    ownersPermissions(folder)
    rmSync(folder, { recursive: true, force: true })
    return { kind: 'ok' }
  } catch (err) {
    return { kind: 'error', message: (err as Error).message }
  }
}

/** Every folder of the tree at `root` readable, writable and enterable by its owner (us); links are not followed. */
function ownersPermissions(root: string): void {
  const folders = [root]
  for (let folder = folders.pop(); folder !== undefined; folder = folders.pop()) {
    if (!lstatSync(folder).isDirectory()) continue
    chmodSync(folder, 0o700)
    for (const name of readdirSync(folder)) folders.push(`${folder}/${name}`)
  }
}
