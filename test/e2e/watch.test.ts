// --watch (issue 5): a changed index boots a new pool and the front swaps to it once every
// module has loaded; calls in flight finish on the old pool; a broken index is reported as
// boot-failed and the old pack keeps serving. Each test starts from its own copy of the pack.
import { cpSync, existsSync, readFileSync, renameSync, writeFileSync } from 'node:fs'
import { join } from 'node:path'
import { afterEach, describe, expect, it } from 'vitest'
import { FIXTURES, invoke, request, sleep, spawnHost, type Host, type LogLine } from '../helpers/host.js'
import { tempDirs } from '../helpers/temp-dir.js'

type Index = { artifactVersion: string; tools: Array<Record<string, unknown>> }

const tempDir = tempDirs()
let host: Host | undefined
afterEach(async () => {
  await host?.stop()
  host = undefined
})

/** A fresh copy of the reload pack and a host serving it with --watch. */
async function watched(env: Record<string, string> = {}): Promise<{ host: Host; dir: string; index: string }> {
  const dir = tempDir('kph-watch-')
  cpSync(join(FIXTURES, 'reload-pack'), dir, { recursive: true })
  const index = join(dir, 'index.json')
  host = await spawnHost({ args: ['--index', index, '--host', '127.0.0.1', '--watch'], env })
  return { host, dir, index }
}

/** Saves the index as editors do: a new file renamed over the old one. */
function save(index: string, change: (index: Index) => void): void {
  const parsed = JSON.parse(readFileSync(index, 'utf8')) as Index
  change(parsed)
  writeFileSync(`${index}.tmp`, JSON.stringify(parsed, null, 2))
  renameSync(`${index}.tmp`, index)
}

/** A line of `kind` logged after the first `seen` lines. */
function after(h: Host, kind: string, seen: number, match: (l: LogLine) => boolean = () => true): Promise<LogLine> {
  return h.waitFor(kind, (l) => h.lines.indexOf(l) >= seen && match(l))
}

async function waitForFile(path: string): Promise<void> {
  for (let i = 0; i < 1_000 && !existsSync(path); i++) await sleep(20)
  expect(existsSync(path)).toBe(true)
}

describe('a changed index is served once every module has loaded', () => {
  it('/v1/info and calls follow the new index: a new artifactVersion and an added tool', async () => {
    const { host, index } = await watched()
    expect((await request(host, '/v1/info')).body.artifactVersion).toBe('1')

    save(index, (i) => {
      i.artifactVersion = '2'
      i.tools.push({ id: 'added', input: { type: 'object' }, output: { type: 'object' }, modulePath: 'tools/added.js', version: '1.0.0' })
    })
    const reloaded = await host.waitFor('reloaded')
    expect(reloaded).toMatchObject({ packId: 'reload', artifactVersion: '2', indexHash: expect.stringMatching(/^sha256:[0-9a-f]{64}$/) })

    const info = (await request(host, '/v1/info')).body
    expect(info).toMatchObject({ artifactVersion: '2', indexHash: reloaded.indexHash })
    expect(info.tools).toContainEqual({ id: 'added', version: '1.0.0' })
    const added = await invoke(host, 'added')
    expect(added.body).toEqual({ v: 2, kind: 'result', output: { added: true } })
    expect(added.headers.get('kindgi-artifact-version')).toBe('2')
  })

  it('an index written in place (not renamed) is picked up too', async () => {
    const { host, index } = await watched()
    const parsed = JSON.parse(readFileSync(index, 'utf8')) as Index
    parsed.artifactVersion = 'in-place'
    writeFileSync(index, JSON.stringify(parsed))
    await host.waitFor('reloaded', (l) => l.artifactVersion === 'in-place')
    expect((await invoke(host, 'echo', { x: 1 })).headers.get('kindgi-artifact-version')).toBe('in-place')
  })
})

describe('under KINDGI_PACK_SANDBOX=strict, as docker compose runs it', () => {
  it('the front sees the change and reloads the strict pack', async () => {
    const { host, index } = await watched({ KINDGI_PACK_SANDBOX: 'strict' })
    save(index, (i) => {
      i.artifactVersion = 'strict-2'
    })
    await host.waitFor('reloaded', (l) => l.artifactVersion === 'strict-2')
    const answer = await invoke(host, 'echo', { z: 1 })
    expect(answer.body).toEqual({ v: 2, kind: 'result', output: { z: 1 } })
    expect(answer.headers.get('kindgi-artifact-version')).toBe('strict-2')
  })
})

/** A gate call held open on the first pool while a save swaps in artifact version 2; `open` lets it finish. */
async function reloadedDuringCall(env: Record<string, string> = {}): Promise<{ host: Host; open: string; inFlight: ReturnType<typeof invoke> }> {
  const { host, dir, index } = await watched(env)
  const started = join(dir, 'started')
  const open = join(dir, 'open')
  const inFlight = invoke(host, 'gate', { started, open })
  await waitForFile(started)
  save(index, (i) => {
    i.artifactVersion = '2'
  })
  await host.waitFor('reloaded', (l) => l.artifactVersion === '2')
  return { host, open, inFlight }
}

describe('a call in flight during the swap', () => {
  it('finishes on the old pool while new calls already go to the new one', async () => {
    const { host, open, inFlight } = await reloadedDuringCall()
    expect((await invoke(host, 'echo', { y: 1 })).headers.get('kindgi-artifact-version')).toBe('2')

    writeFileSync(open, 'go')
    const answer = await inFlight
    expect(answer.status).toBe(200)
    expect(answer.body).toEqual({ v: 2, kind: 'result', output: { opened: true } })
    expect(answer.headers.get('kindgi-artifact-version')).toBe('1')
    expect(host.lines.filter((l) => l.kind === 'worker-replaced')).toEqual([])
  })
})

describe("the concurrency cap is the process's, whichever pool a call runs on", () => {
  it('a call still running on the old pool counts after the swap: at a cap of 1 the next call answers 503 until it ends', async () => {
    const { host, open, inFlight } = await reloadedDuringCall({ KINDGI_PACK_SERVICE_MAX_CONCURRENCY: '1' })
    const refused = await invoke(host, 'echo', { y: 1 })
    expect(refused.status, JSON.stringify(refused.body)).toBe(503)
    writeFileSync(open, 'go')
    expect((await inFlight).status).toBe(200)
    expect((await invoke(host, 'echo', { y: 2 })).headers.get('kindgi-artifact-version')).toBe('2')
  })
})

describe('a broken index', () => {
  it('is reported as one boot-failed line, the process lives on and the old pack keeps serving', async () => {
    const { host, index } = await watched()
    const seen = host.lines.length
    writeFileSync(`${index}.tmp`, '{ "v": 1, ')
    renameSync(`${index}.tmp`, index)
    const failed = await after(host, 'boot-failed', seen)
    expect(failed.problems).toEqual([expect.stringContaining('Cannot read the pack index')])

    expect((await request(host, '/readyz')).status).toBe(200)
    expect((await request(host, '/v1/info')).body.artifactVersion).toBe('1')
    expect((await invoke(host, 'echo', { still: 'serving' })).body).toEqual({ v: 2, kind: 'result', output: { still: 'serving' } })
    expect(host.lines.some((l) => l.kind === 'reloaded')).toBe(false)
  })

  it('a missing module fails the reload the same way, and a fixed index is served afterwards', async () => {
    const { host, index } = await watched()
    const good = readFileSync(index, 'utf8')
    save(index, (i) => {
      i.artifactVersion = 'broken'
      i.tools.push({ id: 'ghost', input: { type: 'object' }, output: { type: 'object' }, modulePath: 'tools/ghost.js', version: '1.0.0' })
    })
    const failed = await host.waitFor('boot-failed')
    expect(failed.problems).toContain('Missing module: tools/ghost.js')
    expect((await request(host, '/v1/info')).body.artifactVersion).toBe('1')

    writeFileSync(`${index}.tmp`, good.replace('"artifactVersion": "1"', '"artifactVersion": "fixed"'))
    renameSync(`${index}.tmp`, index)
    await host.waitFor('reloaded', (l) => l.artifactVersion === 'fixed')
    expect((await request(host, '/v1/info')).body.artifactVersion).toBe('fixed')
  })
})

describe('without --watch', () => {
  it('a changed index is not picked up', async () => {
    const dir = tempDir('kph-nowatch-')
    cpSync(join(FIXTURES, 'reload-pack'), dir, { recursive: true })
    const index = join(dir, 'index.json')
    host = await spawnHost({ args: ['--index', index, '--host', '127.0.0.1'] })
    save(index, (i) => {
      i.artifactVersion = '2'
    })
    // Longer than the debounce and the stat poll together: a watcher would have fired by now.
    await sleep(2_500)
    expect((await request(host, '/v1/info')).body.artifactVersion).toBe('1')
    expect(host.lines.some((l) => l.kind === 'reloaded' || l.kind === 'boot-failed')).toBe(false)
  })
})
