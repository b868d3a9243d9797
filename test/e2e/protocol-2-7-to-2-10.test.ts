// docs/spec/CONTRACT.md §3 and §7 (protocol 2.7–2.10): tenant pinning, pause, connections, tool files,
// and no secret in any line the service writes.
import { existsSync } from 'node:fs'
import { join } from 'node:path'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { startFakeFileStore, type FakeFileStore } from '../helpers/fake-file-store.js'
import { invoke, request, sleep, within, spawnHost, TOKEN, sharedHost, type Host } from '../helpers/host.js'
import { tempDirs } from '../helpers/temp-dir.js'

const tempDir = tempDirs()
const dir = tempDir('kph-2x-')

describe('tenant pinning (2.7.0)', () => {
  const host = sharedHost({ env: { KINDGI_PACK_TENANT_ID: 'acme' } })
  const mine = { 'kindgi-tenant-id': 'acme' }

  it('serves the pinned tenant', async () => {
    expect((await invoke(host, 'echo', { a: 1 }, mine, { ctx: { tenantId: 'acme', runId: 'r' } })).body).toEqual({ v: 2, kind: 'result', output: { a: 1 } })
    expect((await request(host, '/v1/info', { headers: mine })).status).toBe(200)
  })
  it('a missing or other kindgi-tenant-id header answers 421 pack-tenant-mismatch on /v1/invoke and /v1/info, and the call never runs', async () => {
    const path = join(dir, 'tenant-marker')
    for (const headers of [{}, { 'kindgi-tenant-id': 'other' }] as Array<Record<string, string>>) {
      const res = await invoke(host, 'marker', { path }, headers, { ctx: { tenantId: 'acme', runId: 'r' } })
      expect(res.status).toBe(421)
      expect(res.body).toMatchObject({ code: 'pack-tenant-mismatch', error: expect.any(String) })
      const info = await request(host, '/v1/info', { headers })
      expect(info.status).toBe(421)
      expect(info.body.code).toBe('pack-tenant-mismatch')
    }
    await sleep(100)
    expect(existsSync(path)).toBe(false)
  })
  it('an invoke whose ctx.tenantId names another tenant answers 421, never runs, and is logged as a call', async () => {
    const path = join(dir, 'ctx-tenant-marker')
    const res = await invoke(host, 'marker', { path }, mine, { ctx: { tenantId: 'evil', runId: 'run-evil' } })
    expect(res.status).toBe(421)
    expect(res.body.code).toBe('pack-tenant-mismatch')
    const line = await host.waitFor('call', (l) => l.runId === 'run-evil')
    expect(line).toMatchObject({ outcome: 'pack-tenant-mismatch', id: 'marker' })
    expect(existsSync(path)).toBe(false)
  })
  it('checks the token before the tenant', async () => {
    expect((await request(host, '/v1/info', { token: 'wrong' })).status).toBe(401)
    expect((await invoke(host, 'echo', {}, {})).status).toBe(421)
  })
  it('leaves probes unpinned', async () => {
    expect((await request(host, '/healthz', { token: null })).status).toBe(200)
    expect((await request(host, '/readyz', { token: null })).status).toBe(200)
  })
})

describe('pause (2.8.0), connections (2.9.0) and tool files (2.10.0)', () => {
  let host: Host
  let store: FakeFileStore
  const FILE_TOKEN = 'file-token-secret-42'
  const waitToken = { id: 'w-1', url: 'https://runtime.invalid/wait/SECRET-WAIT-LINK' }
  beforeAll(async () => {
    store = await startFakeFileStore(FILE_TOKEN)
    host = await spawnHost()
  })
  afterAll(async () => {
    await host?.stop()
    await store?.close()
  })
  const ctx = (extra: Record<string, unknown> = {}) => ({ ctx: { tenantId: 't', runId: 'r', ...extra } })
  const files = () => ({ url: store.url, token: FILE_TOKEN })

  describe('pause', () => {
    it('a tool that says pauses, called with a waitToken, answers exactly { v, kind: "pause", timeoutMs, name }', async () => {
      const res = await invoke(host, 'pause', { timeoutMs: 60000, name: 'carrier pickup' }, {}, ctx({ waitToken }))
      expect(res.body).toEqual({ v: 2, kind: 'pause', timeoutMs: 60000, name: 'carrier pickup' })
      expect((await invoke(host, 'pause', {}, {}, ctx({ waitToken }))).body).toEqual({ v: 2, kind: 'pause' })
    })
    it('without a waitToken, or for a tool that does not declare pauses, answers pause-not-available', async () => {
      expect((await invoke(host, 'pause', {}, {}, ctx())).body).toMatchObject({ code: 'pause-not-available', toolId: 'pause' })
      expect((await invoke(host, 'pause-undeclared', {}, {}, ctx({ waitToken }))).body).toMatchObject({
        code: 'pause-not-available',
        toolId: 'pause-undeclared',
      })
    })
    it('timeoutMs outside 1..2073600000 answers output-validation-failed', async () => {
      for (const timeoutMs of [0, 2073600001, 1.5, 'soon']) {
        expect((await invoke(host, 'pause', { timeoutMs }, {}, ctx({ waitToken }))).body).toMatchObject({ code: 'output-validation-failed' })
      }
      expect((await invoke(host, 'pause', { timeoutMs: 2073600000 }, {}, ctx({ waitToken }))).body).toEqual({ v: 2, kind: 'pause', timeoutMs: 2073600000 })
    })
  })

  describe('connections', () => {
    const connections = {
      mail: { connectionId: 'c-1', app: 'google', appName: 'Google', accessToken: 'SECRET-ACCESS-TOKEN', account: { id: 'a', label: 'ana@acme.example' } },
    }
    it("a thrown connection-rejected naming one of the call's connections answers connection-rejected with it", async () => {
      const res = await invoke(host, 'reject-connection', { connection: 'mail' }, {}, ctx({ connections }))
      expect(res.body).toMatchObject({ v: 2, kind: 'error', code: 'connection-rejected', connection: 'mail', toolId: 'reject-connection' })
    })
    it('naming a connection the call does not have is an ordinary handler-throw', async () => {
      const res = await invoke(host, 'reject-connection', { connection: 'calendar' }, {}, ctx({ connections }))
      expect(res.body).toMatchObject({ code: 'handler-throw' })
    })
  })

  describe('tool files', () => {
    it('store then read a file whose name has spaces and non-ASCII characters', async () => {
      const name = 'Relevé de compte été 2026 ✓.txt'
      const res = await invoke(
        host,
        'files',
        { action: 'roundtrip', text: 'bonjour ☀', name, type: 'text/plain' },
        {},
        ctx({ idempotencyKey: 'k-1', toolFiles: files() }),
      )
      expect(res.body.kind).toBe('result')
      expect(res.body.output.text).toBe('bonjour ☀')
      expect(res.body.output.stored.file).toMatchObject({ name, type: 'text/plain', size: Buffer.byteLength('bonjour ☀') })
      const [post, get] = store.received.slice(-2)
      expect(post).toMatchObject({ method: 'POST', path: '/files' })
      expect(post!.headers['kindgi-file-name']).toBe(encodeURIComponent(name))
      expect(post!.headers['content-type']).toBe('text/plain')
      expect(post!.headers.authorization).toBe(`Bearer ${FILE_TOKEN}`)
      expect(post!.body.toString()).toBe('bonjour ☀')
      expect(get).toMatchObject({ method: 'GET', path: `/files/${encodeURIComponent(res.body.output.stored.file.artifactId)}` })
      expect(get!.headers.authorization).toBe(`Bearer ${FILE_TOKEN}`)
    })
    it.each(['none', 'strict'])('under %s, a file of 10 MiB is stored and one byte more is refused by files.store, naming the limit', async (posture) => {
      const served = posture === 'none' ? host : await spawnHost({ env: { KINDGI_PACK_SANDBOX: 'strict' } })
      try {
        const limit = 10 * 1024 * 1024
        const ok = await invoke(served, 'files', { action: 'store-size', size: limit }, {}, ctx({ idempotencyKey: `k-big-${posture}`, toolFiles: files() }))
        expect(ok.body).toMatchObject({ kind: 'result', output: { stored: limit } })
        const over = await invoke(
          served,
          'files',
          { action: 'store-size', size: limit + 1 },
          {},
          ctx({ idempotencyKey: `k-over-${posture}`, toolFiles: files() }),
        )
        // Before, under strict, the process was killed for a line past its channel's bound; a warm one took its pack process with it.
        expect(over.body).toMatchObject({ kind: 'error', code: 'handler-throw' })
        expect(over.body.message).toContain('files.store takes at most 10485760 bytes')
      } finally {
        if (served !== host) await served.stop()
      }
    })
    it('passes back notStored and notRead as the runtime answered them', async () => {
      store.storeMode = { kind: 'notStored', why: 'type' }
      const stored = await invoke(
        host,
        'files',
        { action: 'store', text: 'x', name: 'x.exe', type: 'application/x-msdownload' },
        {},
        ctx({ idempotencyKey: 'k-2', toolFiles: files() }),
      )
      expect(stored.body.output).toEqual({ answer: { notStored: 'type' } })
      store.storeMode = { kind: 'file' }
      const read = await invoke(host, 'files', { action: 'read', artifactId: 'no such file' }, {}, ctx({ toolFiles: files() }))
      expect(read.body.output).toEqual({ answer: { notRead: 'gone' } })
    })
    it('answers { busy: true } for a 503 tool-files-busy', async () => {
      store.storeMode = { kind: 'busy' }
      const stored = await invoke(
        host,
        'files',
        { action: 'store', text: 'x', name: 'a.txt', type: 'text/plain' },
        {},
        ctx({ idempotencyKey: 'k-3', toolFiles: files() }),
      )
      expect(stored.body.output).toEqual({ answer: { busy: true } })
      store.storeMode = { kind: 'file' }
      const read = await invoke(host, 'files', { action: 'read', artifactId: 'busy' }, {}, ctx({ toolFiles: files() }))
      expect(read.body.output).toEqual({ answer: { busy: true } })
    })
    it("a store that outlives the call's deadline is aborted with the call", async () => {
      // A deadline long enough for the store's request to have been sent on a loaded machine.
      store.storeMode = { kind: 'slow', ms: 10_000 }
      const res = await invoke(
        host,
        'files',
        { action: 'store', text: 'slow', name: 's.txt', type: 'text/plain' },
        { 'kindgi-timeout-ms': '1500' },
        ctx({ idempotencyKey: 'k-4', toolFiles: files() }),
      )
      expect(res.body).toMatchObject({ code: 'deadline-exceeded', toolId: 'files' })
      await within(5_000, () => store.received.at(-1)?.aborted === true)
      expect(store.received.at(-1)).toMatchObject({ method: 'POST', aborted: true })
      store.storeMode = { kind: 'file' }
    })
    it('store exists only with an idempotencyKey; neither exists for a tool that does not declare them; toolFiles never reaches the handler', async () => {
      const noKey = await invoke(host, 'files', { action: 'inspect' }, {}, ctx({ toolFiles: files() }))
      expect(noKey.body.output.has).toEqual({ files: true, store: false, read: true })
      expect(noKey.body.output.ctxKeys).not.toContain('toolFiles')
      const readOnly = await invoke(host, 'files-read-only', { action: 'inspect' }, {}, ctx({ idempotencyKey: 'k', toolFiles: files() }))
      expect(readOnly.body.output.has).toEqual({ files: true, store: false, read: true })
      const undeclared = await invoke(host, 'files-undeclared', { action: 'inspect' }, {}, ctx({ idempotencyKey: 'k', toolFiles: files() }))
      expect(undeclared.body.output.has).toEqual({ files: false, store: false, read: false })
      const noFiles = await invoke(host, 'files', { action: 'inspect' }, {}, ctx({ idempotencyKey: 'k' }))
      expect(noFiles.body.output.has.files).toBe(false)
    })
  })

  describe('trace and ids', () => {
    it('the traceparent trace id, kindgi-run-id and kindgi-request-id are on the call line and every ctx.log record', async () => {
      const traceId = '4bf92f3577b34da6a3ce929d0e0e4736'
      await invoke(
        host,
        'ctx',
        {},
        { traceparent: `00-${traceId}-00f067aa0ba902b7-01`, 'kindgi-run-id': 'hdr-run', 'kindgi-request-id': 'hdr-req' },
        {
          ctx: { tenantId: 't', runId: 'run-traced', requestId: 'req-traced' },
        },
      )
      const record = await host.waitFor('log', (l) => l.runId === 'run-traced')
      expect(record).toMatchObject({ msg: 'ctx inspected', traceId, requestId: 'req-traced', tenantId: 't', target: 'tool', id: 'ctx', keyCount: 5 })
      expect(await host.waitFor('call', (l) => l.runId === 'run-traced')).toMatchObject({ traceId, requestId: 'req-traced' })
      // A check has no ctx: its ids come from the headers.
      await request(host, '/v1/invoke', {
        method: 'POST',
        headers: {
          'content-type': 'application/json',
          traceparent: `00-${traceId}-00f067aa0ba902b7-01`,
          'kindgi-run-id': 'hdr-run',
          'kindgi-request-id': 'hdr-req',
        },
        body: JSON.stringify({ v: 2, kind: 'check-invoke', check: { id: 'bare-boolean' }, config: { answer: true }, trace: {} }),
      })
      expect(await host.waitFor('call', (l) => l.runId === 'hdr-run')).toMatchObject({ target: 'check', requestId: 'hdr-req', traceId })
    })
  })

  describe('what the service writes', () => {
    it('no line on stdout or stderr holds a secret, an access token, a file token, a wait link or the service token', async () => {
      await invoke(
        host,
        'ctx',
        {},
        { traceparent: '00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01' },
        ctx({
          secrets: { apiKey: 'SECRET-API-KEY' },
          connections: { mail: { connectionId: 'c', app: 'g', appName: 'G', accessToken: 'SECRET-ACCESS-TOKEN', account: { id: 'a', label: 'l' } } },
          toolFiles: files(),
          waitToken,
        }),
      )
      await invoke(host, 'throws', {}, {}, ctx({ secrets: { apiKey: 'SECRET-API-KEY' }, waitToken }))
      await sleep(200)
      const everything = JSON.stringify(host.lines) + host.stdout()
      expect(host.lines.filter((l) => l.kind === 'call').length).toBeGreaterThan(10)
      for (const secret of ['SECRET-API-KEY', 'SECRET-ACCESS-TOKEN', FILE_TOKEN, 'SECRET-WAIT-LINK', TOKEN]) {
        expect(everything).not.toContain(secret)
      }
    })
  })
})
