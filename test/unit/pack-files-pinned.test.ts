// What a --watch boot pins for strict calls (src/pack-files.ts readSources): only a regular
// file whose real path lies within the roots a strict process may read itself. The front
// reads as the service's user, outside every wall: a pack's link to a file elsewhere (its own
// /proc/self/environ, the token file) would hand strict pack code what it may not read, and a
// FIFO would stall the boot (stop 38).
import { execFileSync } from 'node:child_process'
import { mkdirSync, symlinkSync, writeFileSync } from 'node:fs'
import { join } from 'node:path'
import { describe, expect, it } from 'vitest'
import { readSources } from '../../src/pack-files.js'
import { tempDirs } from '../helpers/temp-dir.js'

const tempDir = tempDirs()

describe('a --watch boot pins what a strict process could read itself, and nothing else', () => {
  it('a file of the pack, and a link within it, are pinned; links out of it, a FIFO and /proc are not', () => {
    const root = tempDir('kph-pin-')
    const outside = tempDir('kph-pin-outside-')
    mkdirSync(join(root, 'tools'))
    writeFileSync(join(root, 'tools', 'a.js'), 'export default 1\n')
    symlinkSync('a.js', join(root, 'tools', 'inside.js'))
    writeFileSync(join(outside, 'secret.js'), 'secret\n')
    symlinkSync(join(outside, 'secret.js'), join(root, 'tools', 'out.js'))
    symlinkSync('/proc/self/environ', join(root, 'tools', 'env.js'))
    execFileSync('mkfifo', [join(root, 'fifo')])
    symlinkSync('../fifo', join(root, 'tools', 'pipe.js'))
    const files = ['a.js', 'inside.js', 'out.js', 'env.js', 'pipe.js', 'gone.js'].map((name) => join(root, 'tools', name))
    expect(readSources(files, [root])).toEqual({
      [join(root, 'tools', 'a.js')]: 'export default 1\n',
      [join(root, 'tools', 'inside.js')]: 'export default 1\n',
    })
  })
  it('past MAX_SOURCE_BYTES in all, a file is left to load from disk', () => {
    const root = tempDir('kph-pin-big-')
    writeFileSync(join(root, 'big.js'), 'x'.repeat(33 * 1024 * 1024))
    writeFileSync(join(root, 'small.js'), 'y')
    expect(Object.keys(readSources([join(root, 'big.js'), join(root, 'small.js')], [root]))).toEqual([join(root, 'small.js')])
  })
})
