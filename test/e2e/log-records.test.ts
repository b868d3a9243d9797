// The stderr lines of the real host, as the publisher's service writes them (docs/spec/CONTRACT.md §1):
// every line its event, subsystem, level word, severity, time and message; a call line its
// toolId or checkId and, for a valid traceparent, the caller's trace and a span of its own;
// ctx.log records the same trace fields.
import { describe, expect, it } from 'vitest'
import { FIXTURES, invoke, post, sharedHost, spawnHost, type LogLine } from '../helpers/host.js'

const TRACE = '4bf92f3577b34da6a3ce929d0e0e4736'
const PARENT = '00f067aa0ba902b7'
const TRACEPARENT = `00-${TRACE}-${PARENT}-01`
const SPAN = /^[\da-f]{16}$/
const ISO = /^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$/
const SEVERITY: Record<string, string> = { debug: 'DEBUG', info: 'INFO', warn: 'WARNING', error: 'ERROR' }

const ctx = (runId: string) => ({ ctx: { tenantId: 't', runId } })

function expectPublisherFields(line: LogLine): void {
  expect(line.kind, JSON.stringify(line)).toEqual(expect.any(String))
  expect(line.event, JSON.stringify(line)).toBe(line.kind)
  expect(line.subsystem, JSON.stringify(line)).toBe('pack')
  expect(Object.keys(SEVERITY), JSON.stringify(line)).toContain(line.level)
  expect(line.severity, JSON.stringify(line)).toBe(SEVERITY[line.level as string])
  expect(line.time, JSON.stringify(line)).toMatch(ISO)
  expect(line.message, JSON.stringify(line)).toEqual(expect.any(String))
  expect((line.message as string).length, JSON.stringify(line)).toBeGreaterThan(0)
}

describe('every line on stderr', () => {
  it('carries event, subsystem, level, severity, time and message, from listening to stopped', async () => {
    // warn: a missing required env is a warn line, and the host still serves.
    const host = await spawnHost({ env: { FIXTURE_REQUIRED: undefined, KINDGI_PACK_ENV_CHECK: 'warn' } })
    await invoke(host, 'echo', { a: 1 }, {}, ctx('every-line'))
    await post(host, { v: 2, kind: 'check-invoke', check: { id: 'bare-boolean' }, config: { answer: true }, trace: {} })
    await post(host, 'not json')
    await invoke(host, 'ctx', {}, { traceparent: TRACEPARENT }, ctx('every-line-ctx'))
    // A handler that ignores its deadline: its worker is replaced (a warn line).
    await invoke(host, 'sleep', { ms: 3000 }, { 'kindgi-timeout-ms': '100' }, ctx('every-line-sleep'))
    await host.waitFor('worker-replaced')
    expect(await host.stop()).toBe(0)
    const kinds = new Set(host.lines.map((l) => l.kind))
    for (const kind of ['listening', 'missing-env', 'call', 'log', 'worker-replaced', 'draining', 'stopped']) expect(kinds).toContain(kind)
    for (const line of host.lines) expectPublisherFields(line)
    expect(host.lines.find((l) => l.kind === 'missing-env')).toMatchObject({ level: 'warn', severity: 'WARNING' })
    expect(host.lines.find((l) => l.kind === 'listening')?.message).toBe(`listening on port ${host.port}: pack fixture 20261130.7`)
  })

  it('the lines of a host that cannot start are error lines with the same fields', async () => {
    const badConfig = await spawnHost({ env: { PORT: 'not-a-port' }, waitListening: false })
    const invalid = await badConfig.waitFor('config-invalid')
    expect(await badConfig.exited).toBe(1)
    expectPublisherFields(invalid)
    expect(invalid).toMatchObject({ level: 'error', severity: 'ERROR' })
    expect(invalid.message).toMatch(/^configuration invalid: .*PORT/)

    const noIndex = await spawnHost({ index: `${FIXTURES}/no-such-pack/index.json`, waitListening: false })
    const failed = await noIndex.waitFor('boot-failed')
    expect(await noIndex.exited).toBe(1)
    expectPublisherFields(failed)
    expect(failed).toMatchObject({ level: 'error', severity: 'ERROR' })
    expect(failed.message).toMatch(/^boot failed: Cannot read the pack index/)
  })
})

describe('call lines and ctx.log records', () => {
  const host = sharedHost()

  it('a call line carries toolId for a tool and a message saying what ran, how it ended and how long it took', async () => {
    await invoke(host, 'echo', {}, {}, ctx('tool-id'))
    const line = await host.waitFor('call', (l) => l.runId === 'tool-id')
    expect(line).toMatchObject({ target: 'tool', id: 'echo', toolId: 'echo', outcome: 'ok' })
    expect(line).not.toHaveProperty('checkId')
    expect(line.message).toBe(`call to tool echo: ok in ${line.durationMs as number} ms`)
    await invoke(host, 'throws', {}, {}, ctx('tool-throws'))
    expect((await host.waitFor('call', (l) => l.runId === 'tool-throws')).message).toMatch(/^call to tool throws: handler-throw in [\d.]+ ms$/)
  })

  it("a check's call line carries checkId", async () => {
    await post(host, { v: 2, kind: 'check-invoke', check: { id: 'bare-boolean' }, config: { answer: true }, trace: {} }, { 'kindgi-run-id': 'check-id' })
    const line = await host.waitFor('call', (l) => l.runId === 'check-id')
    expect(line).toMatchObject({ target: 'check', id: 'bare-boolean', checkId: 'bare-boolean', outcome: 'ok' })
    expect(line).not.toHaveProperty('toolId')
    expect(line.message).toMatch(/^call to check bare-boolean: ok in [\d.]+ ms$/)
  })

  it("a call line carries the caller's traceId and a span id of its own, fresh for every call", async () => {
    await invoke(host, 'echo', {}, { traceparent: TRACEPARENT }, ctx('traced-1'))
    await invoke(host, 'echo', {}, { traceparent: TRACEPARENT }, ctx('traced-2'))
    await post(
      host,
      { v: 2, kind: 'check-invoke', check: { id: 'bare-boolean' }, config: { answer: true }, trace: {} },
      { traceparent: TRACEPARENT, 'kindgi-run-id': 'traced-check' },
    )
    const lines = [
      await host.waitFor('call', (l) => l.runId === 'traced-1'),
      await host.waitFor('call', (l) => l.runId === 'traced-2'),
      await host.waitFor('call', (l) => l.runId === 'traced-check'),
    ]
    for (const line of lines) {
      expect(line.traceId).toBe(TRACE)
      expect(line.spanId).toMatch(SPAN)
      expect(line.spanId).not.toBe(PARENT)
    }
    expect(new Set(lines.map((l) => l.spanId)).size).toBe(3)
  })

  it('a call whose traceparent is invalid carries neither traceId nor spanId', async () => {
    const invalid = [
      `ff-${TRACE}-${PARENT}-01`,
      `00-${'0'.repeat(32)}-${PARENT}-01`,
      `00-${TRACE}-${'0'.repeat(16)}-01`,
      `00-${TRACE.toUpperCase()}-${PARENT}-01`,
      `00-${TRACE}-${PARENT}-01-extra`,
      `00-${TRACE}-${PARENT}`,
    ]
    for (const [i, traceparent] of invalid.entries()) await invoke(host, 'echo', {}, { traceparent }, ctx(`untraced-${i}`))
    for (const i of invalid.keys()) {
      const line = await host.waitFor('call', (l) => l.runId === `untraced-${i}`)
      expect(line, invalid[i]).not.toHaveProperty('traceId')
      expect(line, invalid[i]).not.toHaveProperty('spanId')
      expect(line.outcome).toBe('ok')
    }
  })

  it("a ctx.log record carries the call's traceId and spanId, its toolId, and the fields every line carries", async () => {
    await invoke(host, 'ctx', {}, { traceparent: TRACEPARENT }, ctx('ctx-log-traced'))
    const call = await host.waitFor('call', (l) => l.runId === 'ctx-log-traced')
    const record = await host.waitFor('log', (l) => l.runId === 'ctx-log-traced')
    expectPublisherFields(record)
    expect(record).toMatchObject({
      kind: 'log',
      event: 'log',
      level: 'info',
      severity: 'INFO',
      message: 'ctx inspected',
      toolId: 'ctx',
      traceId: TRACE,
      keyCount: expect.any(Number),
    })
    expect(record.spanId).toMatch(SPAN)
    expect(record.spanId).toBe(call.spanId)
    expect(record.spanId).not.toBe(PARENT)

    await invoke(host, 'ctx', {}, { traceparent: `00-${TRACE}-${PARENT}-0G` }, ctx('ctx-log-untraced'))
    const untraced = await host.waitFor('log', (l) => l.runId === 'ctx-log-untraced')
    expect(untraced).not.toHaveProperty('traceId')
    expect(untraced).not.toHaveProperty('spanId')
  })
})
