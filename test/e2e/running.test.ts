// docs/spec/CONTRACT.md §6 for the warm postures: deadlines, callers leaving, the cap, dying workers,
// stdio, and what a handler's ctx holds.
import { existsSync, readFileSync } from 'node:fs'
import { join } from 'node:path'
import { describe, expect, it } from 'vitest'
import { invoke, invokeThenLeave, post, sleep, within, spawnHost, sharedHost, TOKEN } from '../helpers/host.js'
import { tempDirs } from '../helpers/temp-dir.js'

const CAP = 4
// Removed after the shared host has stopped.
const tempDir = tempDirs()
const dir = tempDir('kph-running-')
const host = sharedHost({ env: { KINDGI_PACK_SERVICE_MAX_CONCURRENCY: String(CAP), KINDGI_PACK_SECRET_NOT: 'x' } })

describe('deadlines', () => {
  it('a call past its deadline answers deadline-exceeded at once and its abortSignal fires', async () => {
    // A deadline long enough for the handler to have started on a loaded machine; answered
    // well before the 10-s sleep would have ended.
    const marker = join(dir, 'aborted-1')
    const started = Date.now()
    const res = await invoke(host, 'sleep', { ms: 10_000, marker }, { 'kindgi-timeout-ms': '1000' })
    const took = Date.now() - started
    expect(res.body).toEqual({ v: 2, kind: 'error', code: 'deadline-exceeded', message: 'sleep passed its deadline', toolId: 'sleep' })
    expect(took).toBeLessThan(5_000)
    // The abort crosses to the call's pack process and its worker: give it a moment on a busy machine.
    expect(await within(5000, () => existsSync(marker)), 'the abort marker written within 5 s').toBe(true)
    expect(readFileSync(marker, 'utf8')).toBe('aborted')
  })

  it('a handler spinning in for(;;){} is answered just past its deadline, its worker is replaced, and the pool serves the full concurrency afterwards', async () => {
    const started = Date.now()
    const res = await invoke(host, 'spin', {}, { 'kindgi-timeout-ms': '300' })
    const took = Date.now() - started
    expect(res.body).toMatchObject({ code: 'deadline-exceeded', toolId: 'spin' })
    // The answer is the front's timer; the slowest other path is the 2-s grace before a kill.
    expect(took).toBeLessThan(300 + 1_700)
    await host.waitFor('worker-replaced', (l) => l.reason === 'deadline' && l.id === 'spin@1.0.0')
    const calls = await Promise.all(Array.from({ length: CAP }, () => invoke(host, 'sleep', { ms: 300 })))
    for (const call of calls) expect(call.body).toEqual({ v: 2, kind: 'result', output: { slept: 300 } })
  })

  it('a call that waited behind one holding its worker in synchronous code is answered, and so is the call ahead, with its own result', async () => {
    // One core: the second call waits behind the first on its worker (a tool whose calls are short).
    const oneCore = await spawnHost({ env: { KINDGI_PACK_WORKER_THREADS: '1' } })
    try {
      for (let i = 0; i < 5; i++) expect((await invoke(oneCore, 'burn', {})).body).toMatchObject({ kind: 'result' })
      const order: string[] = []
      const noted = <T>(name: string, res: T): T => {
        order.push(name)
        return res
      }
      const ahead = invoke(oneCore, 'burn', { ms: 3000 }).then((res) => noted('ahead', res))
      const behind = invoke(oneCore, 'burn', {}, { 'kindgi-timeout-ms': '300' }).then((res) => noted('behind', res))
      // Before, the one behind could not be taken back while the worker burnt, so its stop was
      // never acted on, and 2 s later the front ended the whole pack process, the call ahead with it.
      // Taken back at once, it ran elsewhere, or waited for the core and passed its deadline.
      const answered = (await behind).body
      if (answered.kind === 'result') expect(answered).toEqual({ v: 2, kind: 'result', output: { burnedMs: 0 } })
      else expect(answered).toEqual({ v: 2, kind: 'error', code: 'deadline-exceeded', message: 'burn passed its deadline', toolId: 'burn' })
      expect((await ahead).body).toEqual({ v: 2, kind: 'result', output: { burnedMs: 3000 } })
      expect(order).toEqual(['behind', 'ahead'])
      expect(oneCore.lines.filter((l) => l.kind === 'worker-replaced')).toEqual([])
    } finally {
      await oneCore.stop()
    }
  })

  it('a kindgi-timeout-ms that is not a positive integer falls back to the default', async () => {
    for (const value of ['0', '-5', 'soon', '1.5']) {
      expect((await invoke(host, 'sleep', { ms: 20 }, { 'kindgi-timeout-ms': value })).body).toMatchObject({ kind: 'result' })
    }
  })
})

describe('answers of every size', () => {
  it('a call alone on the workers is answered intact from shared memory, and one past the 16 KiB cell by message', async () => {
    for (const length of [10, 5000, 40_000]) {
      const text = 'é✓🚀 '.repeat(length / 5)
      const res = await invoke(host, 'echo', { text })
      expect(res.body).toEqual({ v: 2, kind: 'result', output: { text } })
    }
  })
})

describe('cpuMs on a warm worker', () => {
  it("counts each call's own busy time from its start: calls under the budget pass one after another on the same warm worker, and time waiting on I/O does not count", async () => {
    for (let i = 0; i < 3; i++) {
      expect((await invoke(host, 'busy', { burnMs: 150 })).body).toEqual({ v: 2, kind: 'result', output: { burnedMs: 150 } })
    }
    expect((await invoke(host, 'busy', { idleMs: 700, burnMs: 50 })).body).toEqual({ v: 2, kind: 'result', output: { burnedMs: 50 } })
  })
  it('a call busy past cpuMs after waiting on I/O is stopped soon after its budget, naming cpuMs', async () => {
    const started = Date.now()
    const res = await invoke(host, 'busy', { idleMs: 400, burnMs: 20_000 }, { 'kindgi-timeout-ms': '30000' })
    expect(res.body).toEqual({ v: 2, kind: 'error', code: 'deadline-exceeded', message: expect.stringContaining('cpuMs 300'), toolId: 'busy' })
    expect(Date.now() - started).toBeLessThan(6_000)
    await host.waitFor('worker-replaced', (l) => l.reason === 'cpu' && l.id === 'busy@1.0.0')
  })
})

describe('memMB on a warm worker', () => {
  it('Buffers held past memMB end that call with handler-throw naming memMB, whichever call of the worker it is, and the tool serves on', async () => {
    for (let i = 0; i < 3; i++) expect((await invoke(host, 'hoard', { mb: 8 })).body).toEqual({ v: 2, kind: 'result', output: { heldMB: 8 } })
    const res = await invoke(host, 'hoard', { mb: 400 }, { 'kindgi-timeout-ms': '30000' })
    expect(res.body).toMatchObject({ kind: 'error', code: 'handler-throw', toolId: 'hoard' })
    expect(res.body.message).toContain('memMB 64')
    await host.waitFor('worker-replaced', (l) => l.reason === 'memory' && l.id === 'hoard@1.0.0')
    expect((await invoke(host, 'hoard', { mb: 8 })).body).toEqual({ v: 2, kind: 'result', output: { heldMB: 8 } })
  })
})

describe('a caller that goes away', () => {
  it('ends the call as cancelled on the call line and fires the abortSignal', async () => {
    const marker = join(dir, 'aborted-cancel')
    const begun = join(dir, 'started-cancel')
    const message = { v: 2, kind: 'invoke', tool: { id: 'sleep' }, input: { ms: 10_000, marker, started: begun }, ctx: { tenantId: 't', runId: 'run-cancel' } }
    await invokeThenLeave(host, message, () => existsSync(begun))
    const line = await host.waitFor('call', (l) => l.runId === 'run-cancel')
    expect(line).toMatchObject({ target: 'tool', id: 'sleep', outcome: 'cancelled' })
    await within(5_000, () => existsSync(marker) && readFileSync(marker, 'utf8') === 'aborted')
    expect(readFileSync(marker, 'utf8')).toBe('aborted')
  })
})

describe('a worker that dies', () => {
  it('process.exit in a handler answers handler-throw saying the worker exited, and the service lives on', async () => {
    const res = await invoke(host, 'exit')
    expect(res.body).toMatchObject({ code: 'handler-throw', toolId: 'exit' })
    expect(res.body.message).toContain('the worker running it exited')
    await host.waitFor('worker-replaced', (l) => l.reason === 'crash' && l.id === 'exit@1.0.0')
    expect((await invoke(host, 'echo', { after: 'exit' })).body).toEqual({ v: 2, kind: 'result', output: { after: 'exit' } })
  })
})

describe('pack code output', () => {
  it('a forged protocol line on stdout reaches the service stdout, never the response', async () => {
    const res = await invoke(host, 'forge')
    expect(res.body).toEqual({ v: 2, kind: 'result', output: { honest: true } })
    await within(5_000, () => host.stdout().includes('"forged":true'))
    expect(host.stdout()).toContain('"forged":true')
  })
})

describe('what pack code sees', () => {
  it('the token is absent from process.env in pack code', async () => {
    const res = await invoke(host, 'env')
    expect(res.body.kind).toBe('result')
    expect(res.body.output.names).not.toContain('KINDGI_PACK_SERVICE_TOKEN')
    expect(JSON.stringify(res.body.output.values)).not.toContain(TOKEN)
  })
  it('ctx is the wire context minus toolFiles, with secrets and connections non-enumerable', async () => {
    const res = await invoke(
      host,
      'ctx',
      {},
      {},
      {
        ctx: {
          tenantId: 't',
          runId: 'r',
          requestId: 'q',
          secrets: { apiKey: 'sk-123' },
          connections: { mail: { connectionId: 'c', app: 'google', appName: 'Google', accessToken: 'at-1', account: { id: 'a', label: 'l' } } },
          toolFiles: { url: 'http://127.0.0.1:1/files', token: 'ft-1' },
        },
      },
    )
    const out = res.body.output
    expect(out.keys).toEqual(['abortSignal', 'pause', 'requestId', 'runId', 'tenantId'])
    expect(JSON.stringify(out.json)).not.toContain('sk-123')
    expect(JSON.stringify(out.json)).not.toContain('at-1')
    expect(out).toMatchObject({ hasSecrets: true, secretValue: 'sk-123', hasConnections: true, hasLog: true, abortable: true, toolFiles: false })
  })
  it('a ctx field named __proto__ stays a plain field, never the prototype of ctx', async () => {
    const raw = '{"v":2,"kind":"invoke","tool":{"id":"ctx"},"input":{},"ctx":{"tenantId":"t","runId":"r","__proto__":{"polluted":true}}}'
    const res = await post(host, raw)
    expect(res.body.kind).toBe('result')
    expect(res.body.output.keys).toContain('__proto__')
    expect(res.body.output.json.polluted).toBeUndefined()
  })
  it('a `none` worker is warm: module state lives across calls', async () => {
    const first = (await invoke(host, 'counter')).body.output.count
    const second = (await invoke(host, 'counter')).body.output.count
    expect(second).toBeGreaterThanOrEqual(1)
    expect(typeof first).toBe('number')
  })
})

describe('the concurrency cap', () => {
  it('past KINDGI_PACK_SERVICE_MAX_CONCURRENCY a call answers 503 overloaded at once and provably never runs', async () => {
    const capped = await spawnHost({ env: { KINDGI_PACK_SERVICE_MAX_CONCURRENCY: '1' } })
    try {
      const begun = join(dir, 'started-held')
      const held = invoke(capped, 'sleep', { ms: 3000, started: begun })
      expect(await within(5_000, () => existsSync(begun)), 'the call holding the slot started').toBe(true)
      const path = join(dir, 'must-not-exist')
      const started = Date.now()
      const refused = await invoke(capped, 'marker', { path })
      // Waiting for the slot would take until the held call ends, seconds later.
      expect(Date.now() - started).toBeLessThan(1_500)
      expect(refused.status).toBe(503)
      expect(refused.body).toEqual({ error: 'overloaded' })
      expect(refused.headers.get('retry-after')).toBe('1')
      expect((await held).body).toEqual({ v: 2, kind: 'result', output: { slept: 3000 } })
      await sleep(200)
      expect(existsSync(path)).toBe(false)
      // With the slot free again, the same call runs.
      expect((await invoke(capped, 'marker', { path })).body).toEqual({ v: 2, kind: 'result', output: { ran: true } })
      expect(existsSync(path)).toBe(true)
    } finally {
      await capped.stop()
    }
  })
})

describe('call lines', () => {
  it('every dispatched call is logged with its ids, the trace id and the pack', async () => {
    await invoke(
      host,
      'echo',
      {},
      { traceparent: '00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01', 'kindgi-request-id': 'hdr-req' },
      {
        ctx: { tenantId: 'ten', runId: 'run-ids', projectId: 'p', orgId: 'o', requestId: 'req-1' },
      },
    )
    const line = await host.waitFor('call', (l) => l.runId === 'run-ids')
    expect(line).toMatchObject({
      target: 'tool',
      id: 'echo',
      outcome: 'ok',
      tenantId: 'ten',
      projectId: 'p',
      orgId: 'o',
      requestId: 'req-1',
      traceId: '4bf92f3577b34da6a3ce929d0e0e4736',
      packId: 'fixture',
      artifactVersion: '20261130.7',
    })
    expect(typeof line.durationMs).toBe('number')
  })
})
