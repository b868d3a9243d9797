import { spawnSync } from 'node:child_process'
import { mkdirSync, mkdtempSync, rmSync, symlinkSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { describe, expect, it, onTestFinished } from 'vitest'
import { callFolderEnv, everywhereBut, packProcessCommand, strictCommand, strictReads } from '../../src/pool/strict-flags.js'

describe("a strict process's call folder is granted in its environment, not on its command line", () => {
  it('the process may write its folder (a name with a space and a quote) and nothing beside it; the command line never names the folder', () => {
    const dir = mkdtempSync(join(tmpdir(), 'kph-flags-'))
    onTestFinished(() => rmSync(dir, { recursive: true, force: true }))
    const folder = join(dir, 'call "one" two')
    mkdirSync(folder)
    const env = callFolderEnv(folder, { KEEP: 'kept' })
    const script = `
      const fs = require('node:fs')
      const tryIt = (f) => { try { f(); return 'ok' } catch (err) { return err.code } }
      console.log(JSON.stringify({
        own: tryIt(() => fs.writeFileSync(${JSON.stringify(join(folder, 'a'))}, 'x')),
        beside: tryIt(() => fs.writeFileSync(${JSON.stringify(join(dir, 'b'))}, 'x')),
        kept: process.env.KEEP,
      }))`
    const run = spawnSync(process.execPath, ['--permission', '-e', script], { encoding: 'utf8', env })
    expect(JSON.parse(run.stdout), run.stderr).toEqual({ own: 'ok', beside: 'ERR_ACCESS_DENIED', kept: 'kept' })
    const command = strictCommand('/host/strict.cjs', { readRoots: ['/pack'], networkNone: false, memMB: undefined, dataBaseline: undefined })
    expect(command.join(' ')).not.toContain(dir)
  })

  it('adds to the NODE_OPTIONS it was given, never replaces them', () => {
    expect(callFolderEnv('/t/call-1', { NODE_OPTIONS: '--trace-warnings' }).NODE_OPTIONS).toBe(
      '--trace-warnings "--allow-fs-read=/t/call-1" "--allow-fs-read=/t/call-1/*" "--allow-fs-write=/t/call-1" "--allow-fs-write=/t/call-1/*"',
    )
  })
})

describe("a warm pack process's read grants: everywhere but the hidden paths", () => {
  it('leave out a hidden folder and a link one level below a top folder that leads into it, and keep its siblings', () => {
    // In the system's temp folder: one level below a top folder, as /var/run is.
    const dir = mkdtempSync(join(tmpdir(), 'kph-everywhere-'))
    const secret = join(dir, 'secret')
    mkdirSync(secret)
    mkdirSync(join(dir, 'sibling'))
    const link = `${dir}-link`
    symlinkSync(secret, link)
    onTestFinished(() => {
      rmSync(link, { force: true })
      rmSync(dir, { recursive: true, force: true })
    })
    const granted = everywhereBut(['/proc', secret])
    const covers = (path: string) => granted.some((g) => path === g || path.startsWith(`${g}/`))
    expect(covers('/proc/self/environ')).toBe(false)
    expect(covers(join(secret, 'token'))).toBe(false)
    expect(covers(join(link, 'token')), 'the link into the hidden folder').toBe(false)
    expect(covers(join(dir, 'sibling', 'x'))).toBe(true)
    expect(covers('/etc/hostname')).toBe(true)
  })
})

describe("a warm pack process's grants are listed once, not at each of its starts", () => {
  it("an entry made beside a hidden folder after the first start is in no later start's grants: its folders were not listed again", () => {
    // Listing the root's folders at every start let a tool that filled /tmp, then had its process
    // end, hold the front's event loop a second at each restart (stop 42).
    const dir = mkdtempSync(join(tmpdir(), 'kph-listed-once-'))
    const secret = join(dir, 'secret')
    mkdirSync(secret)
    onTestFinished(() => rmSync(dir, { recursive: true, force: true }))
    const walls = { hidden: ['/proc', join(secret, 'token')], keepModes: false }
    const off = { kind: 'off', why: 'a unit test' } as const
    const first = packProcessCommand('entry.js', false, walls, undefined, off)
    mkdirSync(join(dir, 'made-later'))
    const later = packProcessCommand('entry.js', false, walls, undefined, off)
    // Listed afresh, the new entry is granted by name: the folder is listed entry by entry.
    expect(everywhereBut(walls.hidden)).toContain(join(dir, 'made-later'))
    expect(later).toEqual(first)
    expect(later).not.toContain(`--allow-fs-read=${join(dir, 'made-later')}`)
  })
})

describe('what a strict process may read above its roots: the package.json files there, which the module loader reads', () => {
  it('names each package.json above a root, not its folder, nor one inside a root', () => {
    const dir = mkdtempSync(join(tmpdir(), 'kph-scope-'))
    onTestFinished(() => rmSync(dir, { recursive: true, force: true }))
    const root = join(dir, 'repo', 'packs', 'p')
    mkdirSync(root, { recursive: true })
    for (const folder of [dir, join(dir, 'repo'), root]) writeFileSync(join(folder, 'package.json'), '{}')
    const reads = strictReads([root])
    expect(reads).toEqual(expect.arrayContaining([root, join(dir, 'package.json'), join(dir, 'repo', 'package.json')]))
    expect(reads).not.toContain(join(dir, 'repo'))
    expect(reads).not.toContain(join(dir, 'repo', 'packs', 'package.json'))
    expect(reads).not.toContain(join(root, 'package.json'))
  })
  it('leaves out a package.json that is a link (the kernel wall would read where it leads)', () => {
    const dir = mkdtempSync(join(tmpdir(), 'kph-scope-'))
    onTestFinished(() => rmSync(dir, { recursive: true, force: true }))
    const root = join(dir, 'p')
    mkdirSync(root)
    writeFileSync(join(dir, 'elsewhere'), 'a secret')
    symlinkSync(join(dir, 'elsewhere'), join(dir, 'package.json'))
    expect(strictReads([root]).filter((read) => read.startsWith(dir))).toEqual([root])
  })
})
