// A strict call's folder goes whatever its call left in it (src/pool/remove-folder.ts): a
// sub-folder its call made read-only once threw in the spawner and ended it (stop 29). The
// walk that gives folders back their permissions never follows a link out of the folder, and
// runs off the event loop.
import { chmodSync, existsSync, lstatSync, mkdirSync, mkdtempSync, rmSync, symlinkSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { describe, expect, it, onTestFinished } from 'vitest'
import { removeFolder } from '../../src/pool/remove-folder.js'

function scratch(): string {
  const dir = mkdtempSync(join(tmpdir(), 'kph-remove-folder-'))
  onTestFinished(() => {
    chmodSync(dir, 0o700)
    rmSync(dir, { recursive: true, force: true })
  })
  return dir
}

describe('a call folder is removed whatever its call left in it', () => {
  it('a read-only sub-folder with a file in it goes, and the removal says ok', async () => {
    const folder = join(scratch(), 'call')
    mkdirSync(join(folder, 'locked', 'deeper'), { recursive: true })
    writeFileSync(join(folder, 'locked', 'deeper', 'keep'), 'x')
    chmodSync(join(folder, 'locked', 'deeper'), 0o500)
    chmodSync(join(folder, 'locked'), 0o000)
    expect(await removeFolder(folder)).toEqual({ kind: 'ok' })
    expect(existsSync(folder)).toBe(false)
  })

  it('a link to a folder outside is removed, not followed: the folder outside keeps its mode and its files', async () => {
    const base = scratch()
    const outside = join(base, 'outside')
    mkdirSync(outside)
    writeFileSync(join(outside, 'precious'), 'x')
    chmodSync(outside, 0o500)
    const folder = join(base, 'call')
    mkdirSync(join(folder, 'locked'), { recursive: true })
    symlinkSync(outside, join(folder, 'locked', 'link'))
    chmodSync(join(folder, 'locked'), 0o500)
    expect(await removeFolder(folder)).toEqual({ kind: 'ok' })
    expect(existsSync(folder)).toBe(false)
    expect(lstatSync(outside).mode & 0o777).toBe(0o500)
    expect(existsSync(join(outside, 'precious'))).toBe(true)
  })

  it('a folder that is not there is no error', async () => {
    expect(await removeFolder(join(scratch(), 'never-made'))).toEqual({ kind: 'ok' })
  })
})
