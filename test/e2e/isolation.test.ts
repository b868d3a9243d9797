// docs/spec/CONTRACT.md §6 in full, against a hostile pack: under KINDGI_PACK_SANDBOX=strict pack code
// reaches the token by no means, writes only in ctx.tmpDir, spawns nothing and keeps no
// state; memMB, cpuMs and network none hold; every escape leaves the service serving.
import { createHash } from 'node:crypto'
import { cpSync, existsSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs'
import { dirname, join } from 'node:path'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { FIXTURES, invoke, sleep, within, spawnHost, TOKEN, sharedHost, type Host } from '../helpers/host.js'
import { tempDirs } from '../helpers/temp-dir.js'

// Removed after the file, once the hosts of every describe have stopped.
const tempDir = tempDirs()
const HOSTILE = `${FIXTURES}/hostile-pack/index.json`
const sha = (s: string) => createHash('sha256').update(s).digest('hex')

async function servesNormally(host: Host): Promise<void> {
  expect((await invoke(host, 'echo', { still: 'serving' })).body).toEqual({ v: 2, kind: 'result', output: { still: 'serving' } })
}

describe('under KINDGI_PACK_SANDBOX=strict the token is out of reach', () => {
  let host: Host
  beforeAll(async () => {
    // The token comes as an environment variable: the case where it sits in some process's environ.
    host = await spawnHost({ index: HOSTILE, env: { KINDGI_PACK_SANDBOX: 'strict' } })
  })
  afterAll(async () => {
    await host?.stop()
  })

  it('process.env holds no token', async () => {
    const res = await invoke(host, 'read-env')
    expect(res.body.kind).toBe('result')
    expect(JSON.stringify(res.body.output)).not.toContain(TOKEN)
    await servesNormally(host)
  })
  it('/proc/self/environ and the environ of every other process of the service are unreadable', async () => {
    const res = await invoke(host, 'read-proc')
    const results: Record<string, string> = res.body.output.results
    expect(Object.keys(results)).toContain('/proc/self/environ')
    for (const [path, content] of Object.entries(results)) {
      expect(content, path).toBe('denied: ERR_ACCESS_DENIED')
    }
    await servesNormally(host)
  })
  it("workerData and the worker's arguments hold no token", async () => {
    const res = await invoke(host, 'worker-data')
    expect(res.body.kind).toBe('result')
    expect(JSON.stringify(res.body.output)).not.toContain(TOKEN)
  })
  it("no string anywhere in the worker's reachable memory is the token", async () => {
    const canary = 'canary-abcdefghijklmn'
    expect(canary.length).toBe(TOKEN.length)
    const res = await invoke(host, 'heap', { length: TOKEN.length, canary }, { 'kindgi-timeout-ms': '20000' })
    expect(res.body.kind).toBe('result')
    const hashes: string[] = res.body.output.hashes
    expect(hashes).toContain(sha(canary)) // the search sees strings the worker holds…
    expect(hashes).not.toContain(sha(TOKEN)) // …and the token is not one of them
    await servesNormally(host)
  })
  it('spawning `env` is refused', async () => {
    const res = await invoke(host, 'spawn')
    expect(res.body).toMatchObject({ kind: 'error', code: 'handler-throw', toolId: 'spawn' })
    // The permission model answers (no --allow-child-process): Node's own ERR_ACCESS_DENIED.
    expect(res.body.message).toBe(
      'Handler for tool "spawn" threw: Error: Access to this API has been restricted. Use --allow-child-process to manage permissions.',
    )
    await servesNormally(host)
  })
  it('starting a worker thread is refused', async () => {
    const res = await invoke(host, 'start-worker')
    expect(res.body).toMatchObject({ kind: 'error', code: 'handler-throw', toolId: 'start-worker' })
    // The permission model answers (no --allow-worker): Node's own ERR_ACCESS_DENIED.
    expect(res.body.message).toBe(
      'Handler for tool "start-worker" threw: Error: Access to this API has been restricted. Use --allow-worker to manage permissions.',
    )
    await servesNormally(host)
  })
  it('a handler writes in its own ctx.tmpDir, nowhere else, and the folder is gone after the call', async () => {
    const outside = join(tempDir('kph-escape-'), 'escaped.txt')
    const res = await invoke(host, 'write', { path: outside })
    // The permission model answers: the call's process may write its own folder and nothing else.
    expect(res.body.output).toMatchObject({ inside: 'mine', outside: 'denied: ERR_ACCESS_DENIED' })
    expect(existsSync(outside)).toBe(false)
    await within(5_000, () => !existsSync(res.body.output.tmpDir))
    expect(existsSync(res.body.output.tmpDir)).toBe(false)
    await servesNormally(host)
  })
  it('no module state or global survives a call: every call is the first', async () => {
    for (let i = 0; i < 3; i++) expect((await invoke(host, 'state')).body.output).toEqual({ moduleCalls: 1, globalCalls: 1 })
    await host.waitFor('worker-replaced', (l) => l.reason === 'strict' && l.id === 'state@1.0.0')
  })
  it('process.exit answers handler-throw and the service serves right after', async () => {
    const res = await invoke(host, 'exit')
    expect(res.body).toMatchObject({ code: 'handler-throw', toolId: 'exit' })
    expect(res.body.message).toContain('the worker running it exited')
    await servesNormally(host)
  })
  it('a throw from a timer after answering leaves the answer and the service intact', async () => {
    expect((await invoke(host, 'throw-later')).body).toEqual({ v: 2, kind: 'result', output: { answered: true } })
    await sleep(100)
    await servesNormally(host)
  })
  it('signalling the service is refused', async () => {
    const res = await invoke(host, 'kill')
    expect(res.body).toMatchObject({ code: 'handler-throw' })
    expect(res.body.message).toContain('ERR_PACK_SIGNAL_DENIED')
    await sleep(200)
    await servesNormally(host)
  })
})

describe('under KINDGI_PACK_SANDBOX=strict a token file is out of reach too', () => {
  it('the file the token was read from cannot be read by pack code', async () => {
    const file = join(tempDir('kph-secret-'), 'token')
    writeFileSync(file, `${TOKEN}\n`)
    const host = await spawnHost({
      index: HOSTILE,
      env: { KINDGI_PACK_SANDBOX: 'strict', KINDGI_PACK_SERVICE_TOKEN: undefined, KINDGI_PACK_SERVICE_TOKEN_FILE: file },
    })
    try {
      expect((await invoke(host, 'read-file', { path: file })).body.output).toEqual({ denied: 'ERR_ACCESS_DENIED' })
      await servesNormally(host)
    } finally {
      await host.stop()
    }
  })
  it('a token file inside the pack folder is refused at start, since pack code may read there', async () => {
    const pack = tempDir('kph-pack-')
    cpSync(`${FIXTURES}/hostile-pack`, pack, { recursive: true })
    writeFileSync(join(pack, 'token'), TOKEN)
    const host = await spawnHost({
      index: join(pack, 'index.json'),
      waitListening: false,
      env: { KINDGI_PACK_SANDBOX: 'strict', KINDGI_PACK_SERVICE_TOKEN: undefined, KINDGI_PACK_SERVICE_TOKEN_FILE: join(pack, 'token') },
    })
    expect(await host.exited).toBe(1)
    expect(JSON.stringify(host.lines.find((l) => l.kind === 'config-invalid'))).toContain('mount the secret elsewhere')
  })
  it('in a service of another posture, a token file inside the pack folder is refused at start when a tool of the pack is strict, which may read there', async () => {
    // A docs review (stop 38) found the check made only under KINDGI_PACK_SANDBOX=strict: a
    // tool declaring sandbox strict in a `none` service read the token file in its pack folder.
    // In a folder of its own: warm pack code may not read the token file's folder.
    const { indexPath, token } = hostileCopyWithToken('secrets/token', 'read-file')
    const host = await spawnHost({
      index: indexPath,
      waitListening: false,
      env: { KINDGI_PACK_SERVICE_TOKEN: undefined, KINDGI_PACK_SERVICE_TOKEN_FILE: token },
    })
    const listening = await host.waitFor('listening').catch(() => undefined)
    try {
      if (listening !== undefined) {
        host.port = listening.port as number
        host.url = `http://127.0.0.1:${host.port}`
        expect((await invoke(host, 'read-file', { path: token })).body.output, 'what the strict tool read').toEqual({})
      }
      expect(await host.exited).toBe(1)
      expect(JSON.stringify(host.lines.find((l) => l.kind === 'boot-failed'))).toContain(`${token} lies inside`)
    } finally {
      await host.stop()
    }
  })
  it('a token file in the pack folder itself, which warm pack code then may not read, is refused at start naming the token file', async () => {
    // Before, every warm module failed to load with the permission model's own words.
    const { indexPath, token } = hostileCopyWithToken('token')
    const host = await spawnHost({
      index: indexPath,
      waitListening: false,
      env: { KINDGI_PACK_SERVICE_TOKEN: undefined, KINDGI_PACK_SERVICE_TOKEN_FILE: token },
    })
    expect(await host.exited).toBe(1)
    const failed = host.lines.find((l) => l.kind === 'boot-failed')
    expect(failed?.problems).toEqual([expect.stringContaining(`KINDGI_PACK_SERVICE_TOKEN_FILE ${token} lies in a folder that holds`)])
  })
})

/** A copy of the hostile pack with the token in a file at `tokenPath` within it, and `strictTool` (if any) declared strict. */
function hostileCopyWithToken(tokenPath: string, strictTool?: string): { indexPath: string; token: string } {
  const pack = tempDir('kph-pack-')
  cpSync(`${FIXTURES}/hostile-pack`, pack, { recursive: true })
  const indexPath = join(pack, 'index.json')
  const index = JSON.parse(readFileSync(indexPath, 'utf8')) as { tools: Array<{ id: string; sandbox?: string }> }
  for (const tool of index.tools) if (tool.id === strictTool) tool.sandbox = 'strict'
  writeFileSync(indexPath, JSON.stringify(index))
  const token = join(pack, tokenPath)
  mkdirSync(dirname(token), { recursive: true })
  writeFileSync(token, TOKEN)
  return { indexPath, token }
}

describe('process.binding', () => {
  it('is refused in every posture, so a misused internal binding cannot abort the whole service', async () => {
    const host = await spawnHost({ index: HOSTILE })
    try {
      const res = await invoke(host, 'binding')
      expect(res.body).toMatchObject({ code: 'handler-throw', toolId: 'binding' })
      expect(res.body.message).toContain('ERR_PACK_BINDING_DENIED')
      await servesNormally(host)
    } finally {
      await host.stop()
    }
  })
})

describe('limits and network policy', () => {
  const host = sharedHost({ index: HOSTILE })

  it('a heap past memMB answers handler-throw naming memMB, and the worker is replaced', async () => {
    const res = await invoke(host, 'alloc-heap', {}, { 'kindgi-timeout-ms': '20000' })
    expect(res.body).toMatchObject({ code: 'handler-throw', toolId: 'alloc-heap' })
    expect(res.body.message).toContain('memory limit (memMB 32) was exceeded')
    await host.waitFor('worker-replaced', (l) => l.reason === 'memory' && l.id === 'alloc-heap@1.0.0')
    await servesNormally(host)
  })
  it('Buffers past memMB, which the heap limit does not count, are caught as well', async () => {
    const res = await invoke(host, 'alloc-buffers', {}, { 'kindgi-timeout-ms': '20000' })
    expect(res.body).toMatchObject({ code: 'handler-throw', toolId: 'alloc-buffers' })
    expect(res.body.message).toContain('memMB 48')
    await servesNormally(host)
  })
  it('CPU past cpuMs answers deadline-exceeded naming cpuMs, soon after the budget', async () => {
    const started = Date.now()
    const res = await invoke(host, 'burn', {}, { 'kindgi-timeout-ms': '20000' })
    const took = Date.now() - started
    expect(res.body).toMatchObject({ code: 'deadline-exceeded', toolId: 'burn' })
    expect(res.body.message).toContain('cpuMs 200')
    // 200 ms of budget, checked every 20 ms; the rest is a loaded 2-core machine's slack. Without
    // the budget the call runs to its 20-s deadline.
    expect(took).toBeLessThan(6_000)
    await host.waitFor('worker-replaced', (l) => l.reason === 'cpu' && l.id === 'burn@1.0.0')
    await servesNormally(host)
  })
  it('under network none a socket and fetch are refused inside the handler; an unrestricted tool is unaffected', async () => {
    const socket = await invoke(host, 'socket', { port: host.port })
    expect(socket.body).toMatchObject({ code: 'handler-throw', toolId: 'socket' })
    expect(socket.body.message).toContain('ERR_PACK_NETWORK_DENIED: tool "socket" declares network none')
    const fetched = await invoke(host, 'fetch', { url: `${host.url}/healthz` })
    expect(fetched.body.message).toContain('ERR_PACK_NETWORK_DENIED: tool "fetch" declares network none')
    expect((await invoke(host, 'socket-allowed', { port: host.port })).body).toEqual({ v: 2, kind: 'result', output: { connected: true } })
  })
  it('8 concurrent calls, one of which blows its memory limit, leave the other 7 with their correct results', async () => {
    const calls = [
      invoke(host, 'alloc-heap', {}, { 'kindgi-timeout-ms': '20000' }),
      ...Array.from({ length: 7 }, (_, i) => invoke(host, 'slow-echo', { ms: 400, i }, { 'kindgi-timeout-ms': '20000' })),
    ]
    const [blown, ...others] = await Promise.all(calls)
    expect(blown!.body).toMatchObject({ code: 'handler-throw', toolId: 'alloc-heap' })
    for (const [i, res] of others.entries()) expect(res.body).toEqual({ v: 2, kind: 'result', output: { ms: 400, i } })
  })
})

const NETWORK_DOORS = 16

for (const posture of ['none', 'strict'] as const) {
  describe(`under ${posture}, a network-none tool finds every door to the network refused`, () => {
    const host = sharedHost({ index: HOSTILE, env: posture === 'strict' ? { KINDGI_PACK_SANDBOX: 'strict' } : {} })

    it('import, require, Module._load, getBuiltinModule, the _http and _tls names, the agents, fetch and WebSocket each answer ERR_PACK_NETWORK_DENIED; stdout still works', async () => {
      const res = await invoke(host, 'network-routes')
      expect(res.body.kind, JSON.stringify(res.body)).toBe('result')
      const { doors, stdout } = res.body.output
      expect(Object.keys(doors)).toHaveLength(NETWORK_DOORS)
      for (const [door, said] of Object.entries(doors)) expect.soft(said, door).toBe('ERR_PACK_NETWORK_DENIED')
      expect(stdout).toBe('written')
      await within(5000, () => host.stdout().includes('network-routes still speaks'))
      expect(host.stdout()).toContain('network-routes still speaks')
      await servesNormally(host)
    })
  })
}

describe('a strict network-none call loads no network module before its code reaches one, and every door is refused when it is the first reached', () => {
  const host = sharedHost({ index: HOSTILE, env: { KINDGI_PACK_SANDBOX: 'strict' } })

  it('each door, tried first in a call of its own, answers ERR_PACK_NETWORK_DENIED, with no network module loaded before it; so do the ways around a guard that runs after pack code', async () => {
    const { doors, alone } = (await invoke(host, 'network-routes')).body.output as { doors: Record<string, string>; alone: string[] }
    expect(Object.keys(doors)).toHaveLength(NETWORK_DOORS)
    // Poisoned built-ins, its own resolve hook, net.Socket reached through another class.
    expect(alone).toHaveLength(8)
    for (const door of [...Object.keys(doors), ...alone]) {
      const res = await invoke(host, 'network-routes', { doors: [door] })
      expect(res.body.kind, JSON.stringify(res.body)).toBe('result')
      // Loading them all up front was most of the start of such a process.
      expect.soft(res.body.output.loadedBefore, `loaded before ${door}`).toEqual([])
      expect.soft(res.body.output.doors[door], door).toBe('ERR_PACK_NETWORK_DENIED')
    }
    await servesNormally(host)
  })

  it("hears its abortSignal after its code reached the network: the process's channel was made before net.Socket was refused", async () => {
    const ctx = { tenantId: 't', runId: 'network-abort' }
    // A deadline long enough for its code to have reached the network on a loaded machine.
    const res = await invoke(host, 'network-routes', { doors: ['import net'], holdMs: 10_000 }, { 'kindgi-timeout-ms': '2000' }, { ctx })
    expect(res.body).toMatchObject({ kind: 'error', code: 'deadline-exceeded' })
    expect(await host.waitFor('log', (l) => l.runId === 'network-abort', 5000)).toMatchObject({ message: 'aborted', reason: 'deadline exceeded' })
  })
})
