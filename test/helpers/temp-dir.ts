// Tests make their scratch folders (copies of packs, token files, journals) under the OS temp
// folder; these make them and remove them once the tests that use them are done, so that a
// run of the suite leaves nothing behind in /tmp.
import { chmodSync, existsSync, lstatSync, mkdtempSync, readdirSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { afterAll } from 'vitest'

/**
 * A maker of fresh folders under the OS temp folder (`<prefix>XXXXXX`), usable at once or in
 * any test after; every folder it made is removed by an afterAll registered now, in the file or
 * describe being collected. After-hooks run in reverse order: call it before sharedHost() or the
 * afterAll that stops the hosts using its folders, so they stop first.
 */
export function tempDirs(): (prefix: string) => string {
  const made: string[] = []
  afterAll(() => {
    for (const dir of made.splice(0)) removeTempDir(dir)
  })
  return (prefix) => {
    const dir = mkdtempSync(join(tmpdir(), prefix))
    made.push(dir)
    return dir
  }
}

/**
 * Removes a folder and all in it, once nothing uses it. A folder inside made 0o000 or 0o300 (a
 * strict call's root) gets its owner's permissions back first. Node's rmSync with `force` gives
 * up silently, and leaves the folder, when something inside is removed beside it (a spawner
 * removing a call's folder): it is tried again. A folder that still will not go is said on
 * stderr, not thrown: cleaning up is no test's promise, and must not fail one.
 */
export function removeTempDir(dir: string): void {
  for (let attempt = 1; attempt <= 3 && existsSync(dir); attempt++) {
    try {
      rmSync(dir, { recursive: true, force: true })
    } catch {
      ownersPermissions(dir)
    }
  }
  if (existsSync(dir)) process.stderr.write(`test temp folder left behind: ${dir}\n`)
}

/** Every folder of the tree readable, writable and searchable by its owner, never following a link. */
function ownersPermissions(root: string): void {
  const folders = [root]
  for (let folder = folders.pop(); folder !== undefined; folder = folders.pop()) {
    try {
      if (!lstatSync(folder).isDirectory()) continue
      chmodSync(folder, 0o700)
      for (const entry of readdirSync(folder, { withFileTypes: true })) if (entry.isDirectory()) folders.push(join(folder, entry.name))
    } catch {
      // gone meanwhile, or not ours to change: the removal says what is left
    }
  }
}
