// --watch follows the pack's files, not only its index (issue 18): a save of a module, of a
// file a module imports (TypeScript too), or of a bundle --bundle-map names boots the new pack
// beside the old one and swaps to it; a broken save keeps the old pack serving; a burst of
// saves is one reload. Each test starts from its own copy of test/fixtures/module-watch-pack.
import { cpSync, existsSync, mkdirSync, renameSync, writeFileSync } from 'node:fs'
import { join } from 'node:path'
import { afterEach, describe, expect, it } from 'vitest'
import { FIXTURES, invoke, request, sleep, spawnHost, type Host, type LogLine } from '../helpers/host.js'
import { tempDirs } from '../helpers/temp-dir.js'

const tempDir = tempDirs()
let host: Host | undefined
afterEach(async () => {
  await host?.stop()
  host = undefined
})

/** A fresh copy of the pack and a host serving it with --watch (and `args`). */
async function watched(env: Record<string, string> = {}, args: (dir: string) => string[] = () => []): Promise<{ host: Host; dir: string }> {
  const dir = tempDir('kph-watch-modules-')
  cpSync(join(FIXTURES, 'module-watch-pack'), dir, { recursive: true })
  host = await spawnHost({ args: ['--index', join(dir, 'index.json'), '--host', '127.0.0.1', '--watch', ...args(dir)], env })
  return { host, dir }
}

/** Saves a file as editors do: the new bytes to a temporary file, renamed over the old one. */
function save(path: string, text: string): void {
  writeFileSync(`${path}.tmp~`, text)
  renameSync(`${path}.tmp~`, path)
}

const wordModule = (word: string) => `export const WORD = ${JSON.stringify(word)}\n`
const reloads = (h: Host): LogLine[] => h.lines.filter((l) => l.kind === 'reloaded')

describe('a save of a module the index names', () => {
  it('boots the new pack and serves its code: a reloaded line names the file', async () => {
    const { host, dir } = await watched()
    expect((await invoke(host, 'word')).body.output).toEqual({ word: 'one' })
    save(join(dir, 'tools/word.js'), `export default function word() {\n  return { word: 'saved', module: true }\n}\n`)
    const reloaded = await host.waitFor('reloaded')
    expect(reloaded).toMatchObject({ packId: 'module-watch', artifactVersion: '1', changed: ['tools/word.js'] })
    expect((await invoke(host, 'word')).body.output).toEqual({ word: 'saved', module: true })
  })

  it('written in place (not renamed) is picked up too', async () => {
    const { host, dir } = await watched()
    writeFileSync(join(dir, 'tools/word.js'), `export default () => ({ word: 'in place' })\n`)
    await host.waitFor('reloaded')
    expect((await invoke(host, 'word')).body.output).toEqual({ word: 'in place' })
  })
})

describe('a save of a file a module imports', () => {
  it('a JavaScript file no index entry names: the importing tool answers the new code', async () => {
    const { host, dir } = await watched()
    save(join(dir, 'lib/word.js'), wordModule('two'))
    expect(await host.waitFor('reloaded')).toMatchObject({ changed: ['lib/word.js'] })
    expect((await invoke(host, 'word')).body.output).toEqual({ word: 'two' })
  })

  it('a TypeScript file imported by a TypeScript tool: the new code is stripped and served', async () => {
    const { host, dir } = await watched()
    expect((await invoke(host, 'shout', { text: 'hi' })).body.output).toEqual({ text: 'HI!' })
    save(join(dir, 'lib/shout.ts'), `export function shout(text: string): string {\n  return \`\${text.toUpperCase()}?!\`\n}\n`)
    expect(await host.waitFor('reloaded')).toMatchObject({ changed: ['lib/shout.ts'] })
    expect((await invoke(host, 'shout', { text: 'hi' })).body.output).toEqual({ text: 'HI?!' })
  })
})

describe('a broken save', () => {
  it('is one boot-failed line with reload: true, the old pack keeps serving, and the fixed save is served', async () => {
    const { host, dir } = await watched()
    save(join(dir, 'lib/shout.ts'), 'export function shout(text: string): string {\n  return text +\n')
    const failed = await host.waitFor('boot-failed')
    expect(failed).toMatchObject({ reload: true })
    expect(failed.problems).toEqual([expect.stringContaining('shout')])
    expect((await request(host, '/readyz')).status).toBe(200)
    expect((await invoke(host, 'shout', { text: 'still' })).body.output).toEqual({ text: 'STILL!' })
    expect(reloads(host)).toEqual([])

    save(join(dir, 'lib/shout.ts'), 'export function shout(text: string): string {\n  return `${text}, fixed`\n}\n')
    await host.waitFor('reloaded')
    expect((await invoke(host, 'shout', { text: 'now' })).body.output).toEqual({ text: 'now, fixed' })
  })
})

describe('a burst of saves', () => {
  it('ten saves in 200 ms reload once, and the last save is what is served', async () => {
    const { host, dir } = await watched()
    const file = join(dir, 'lib/word.js')
    const pause = new Int32Array(new SharedArrayBuffer(4))
    // One synchronous loop: nothing of this test process runs between the saves.
    for (let i = 1; i <= 10; i++) {
      save(file, wordModule(`burst-${i}`))
      if (i < 10) Atomics.wait(pause, 0, 0, 20)
    }
    await host.waitFor('reloaded')
    // Past the debounce, a stat poll and a boot: a second reload would have been logged by now.
    await sleep(2_500)
    expect(reloads(host)).toHaveLength(1)
    expect((await invoke(host, 'word')).body.output).toEqual({ word: 'burst-10' })
  })
})

describe('a call in flight during a module save', () => {
  it('finishes on the old pack, with the old code, while new calls get the new code', async () => {
    const { host, dir } = await watched()
    const started = join(dir, 'started')
    const open = join(dir, 'open')
    const inFlight = invoke(host, 'gate', { started, open })
    for (let i = 0; i < 500 && !existsSync(started); i++) await sleep(20)
    expect(existsSync(started)).toBe(true)

    save(join(dir, 'lib/word.js'), wordModule('new'))
    await host.waitFor('reloaded')
    expect((await invoke(host, 'word')).body.output).toEqual({ word: 'new' })

    writeFileSync(open, 'go')
    const answer = await inFlight
    expect(answer.body).toEqual({ v: 2, kind: 'result', output: { opened: true, word: 'one' } })
    expect(host.lines.filter((l) => l.kind === 'worker-replaced')).toEqual([])
  })
})

describe('under KINDGI_PACK_SANDBOX=strict, as docker compose runs it', () => {
  it('a save of a TypeScript module reloads, and a strict call runs the new code', async () => {
    const { host, dir } = await watched({ KINDGI_PACK_SANDBOX: 'strict' })
    save(join(dir, 'lib/shout.ts'), 'export function shout(text: string): string {\n  return `strict ${text}`\n}\n')
    await host.waitFor('reloaded')
    expect((await invoke(host, 'shout', { text: 'call' })).body.output).toEqual({ text: 'strict call' })
  })

  it("a broken save keeps the old pack serving: each strict call loads the code its pack booted with, not the disk's", async () => {
    const { host, dir } = await watched({ KINDGI_PACK_SANDBOX: 'strict' })
    save(join(dir, 'lib/shout.ts'), 'export function shout(text: string): string {\n  return text +\n')
    save(join(dir, 'lib/word.js'), 'export const WORD = \n')
    expect(await host.waitFor('boot-failed')).toMatchObject({ reload: true })
    // Several calls: each is a process of its own, started after the save.
    for (let i = 0; i < 3; i++) {
      expect((await invoke(host, 'shout', { text: `old ${i}` })).body.output).toEqual({ text: `OLD ${i}!` })
      expect((await invoke(host, 'word')).body.output).toEqual({ word: 'one' })
    }
    expect(reloads(host)).toEqual([])
  })
})

describe('--bundle-map', () => {
  it('a save of a bundle the map names reloads; so does a save of the map itself', async () => {
    const { host, dir } = await watched({}, (d) => ['--bundle-map', join(d, 'bundle-map.json')])
    expect((await invoke(host, 'bundled')).body.output).toEqual({ from: 'bundle 1' })
    save(join(dir, 'bundles/bundled.js'), `export default () => ({ from: 'bundle 2' })\n`)
    expect(await host.waitFor('reloaded')).toMatchObject({ changed: ['bundles/bundled.js'] })
    expect((await invoke(host, 'bundled')).body.output).toEqual({ from: 'bundle 2' })

    writeFileSync(join(dir, 'bundles/other.js'), `export default () => ({ from: 'another bundle' })\n`)
    await host.waitFor('reloaded', (l) => (l.changed as string[]).includes('bundles/other.js'))
    const seen = reloads(host).length
    save(join(dir, 'bundle-map.json'), JSON.stringify({ 'tools/bundled.js': 'bundles/other.js' }))
    await host.waitFor('reloaded', (l) => reloads(host).indexOf(l) >= seen)
    expect((await invoke(host, 'bundled')).body.output).toEqual({ from: 'another bundle' })
  })
})

describe("files that are not the pack's", () => {
  it('a save under node_modules or a dot folder, or of a file no module can be, reloads nothing', async () => {
    const { host, dir } = await watched()
    mkdirSync(join(dir, 'node_modules/dep'), { recursive: true })
    mkdirSync(join(dir, '.git'), { recursive: true })
    await sleep(1_200) // the new folders seen by a poll first, as a folder of the pack would be
    writeFileSync(join(dir, 'node_modules/dep/index.js'), 'export const x = 1\n')
    writeFileSync(join(dir, '.git/index.js'), 'x')
    writeFileSync(join(dir, 'README.md'), '# notes\n')
    writeFileSync(join(dir, 'tools/word.js.swp'), 'x')
    await sleep(2_500)
    expect(host.lines.filter((l) => l.kind === 'reloaded' || l.kind === 'boot-failed')).toEqual([])
    // The same host does reload for a file of the pack: the quiet above was not a dead watcher.
    save(join(dir, 'lib/word.js'), wordModule('seen'))
    expect(await host.waitFor('reloaded')).toMatchObject({ changed: ['lib/word.js'] })
  })
})
