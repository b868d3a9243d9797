// Tests make their scratch folders (copies of packs, token files, journals) under the OS temp
// folder; these make them and remove them once the tests that use them are done, so that a
// run of the suite leaves nothing behind in /tmp.
import { mkdtempSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { afterAll } from 'vitest'
import { removeTree } from '../../src/pool/remove-tree.js'

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
 * Removes a folder and all in it, once nothing uses it, as the service removes its own
 * (src/pool/remove-tree.ts: folders made 0o000 or 0o300 inside, entries removed beside it). A
 * folder that still will not go is said on stderr, not thrown: cleaning up is no test's
 * promise, and must not fail one.
 */
export function removeTempDir(dir: string): void {
  const removal = removeTree(dir)
  if (removal.kind === 'error') process.stderr.write(`test temp folder left behind: ${dir}: ${removal.message}\n`)
}
