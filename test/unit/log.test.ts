// The service log (src/log.ts): a `call` line is written by hand, not by pino, for speed; it
// must be the very line pino would have written, and reach stderr before any later line.
// Every line carries what the publisher's service writes (docs/spec/CONTRACT.md §1), and a call line the
// caller's trace when its traceparent is valid (src/http/call-line.ts).
import { openSync, readFileSync } from 'node:fs'
import { join } from 'node:path'
import { pino } from 'pino'
import { describe, expect, it } from 'vitest'
import { callFields, callLine, newSpanId, traceParentOf } from '../../src/http/call-line.js'
import { createLog, pinoOptions } from '../../src/log.js'
import { messageOf } from '../../src/log-messages.js'
import { tempDirs } from '../helpers/temp-dir.js'

function pinoLine(fields: Record<string, unknown>, message: string): string {
  let out = ''
  const logger = pino(pinoOptions(), { write: (s: string) => (out += s) })
  logger.info(fields, message)
  return out
}

const withoutTime = (line: string) => line.replace(/"time":"[^"]+"/, '"time":"T"')
const ISO = /^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$/

const tempDir = tempDirs()

/** The lines a log writes to a file, parsed. */
function logToFile(): { log: ReturnType<typeof createLog>; raw(): string[]; lines(): Record<string, unknown>[] } {
  const path = join(tempDir('kph-log-'), 'log')
  const log = createLog(openSync(path, 'w'))
  const raw = () =>
    readFileSync(path, 'utf8')
      .split('\n')
      .filter((l) => l !== '')
  return { log, raw, lines: () => raw().map((l) => JSON.parse(l) as Record<string, unknown>) }
}

const TRACE = '4bf92f3577b34da6a3ce929d0e0e4736'
const PARENT = '00f067aa0ba902b7'

describe('call lines', () => {
  it('are the JSON lines pino writes, field for field and in order, and are flushed before the next lifecycle line', () => {
    const { log, raw } = logToFile()
    const fields = {
      target: 'tool',
      id: 'weird "id" \\ é✓\n',
      toolId: 'weird "id" \\ é✓\n',
      outcome: 'ok',
      durationMs: 1.25,
      tenantId: 't',
      traceId: TRACE,
      spanId: 'b7ad6b7169203331',
    }
    log.info('call', fields)
    log.info('call', {})
    log.info('listening', { port: 8080 })
    const lines = raw()
    expect(lines).toHaveLength(3)
    expect(withoutTime(lines[0] as string)).toBe(withoutTime(pinoLine({ kind: 'call', event: 'call', ...fields }, messageOf('call', fields)).trimEnd()))
    expect(withoutTime(lines[1] as string)).toBe(withoutTime(pinoLine({ kind: 'call', event: 'call' }, messageOf('call', {})).trimEnd()))
    expect(JSON.parse(lines[0] as string).time).toMatch(ISO)
    expect(JSON.parse(lines[2] as string)).toMatchObject({ level: 'info', kind: 'listening', port: 8080 })
  })

  it('say in their message what was called, how it ended and how long it took', () => {
    expect(messageOf('call', { target: 'tool', id: 'echo', outcome: 'ok', durationMs: 3 })).toBe('call to tool echo: ok in 3 ms')
    expect(messageOf('call', { target: 'check', id: 'no-shouting', outcome: 'handler-throw', durationMs: 0.5 })).toBe(
      'call to check no-shouting: handler-throw in 0.5 ms',
    )
    expect(messageOf('call', { outcome: 'malformed-message', durationMs: 0.2 })).toBe('call (no tool or check named): malformed-message in 0.2 ms')
  })

  it('a call line carries toolId for a tool and checkId for a check, beside id', () => {
    const tool = callLine({ target: 'tool', id: 'echo' }, 'ok', performance.now(), {}, undefined)
    expect(tool).toMatchObject({ target: 'tool', id: 'echo', toolId: 'echo' })
    expect(tool).not.toHaveProperty('checkId')
    const check = callLine({ target: 'check', id: 'c' }, 'ok', performance.now(), {}, undefined)
    expect(check).toMatchObject({ target: 'check', id: 'c', checkId: 'c' })
    expect(check).not.toHaveProperty('toolId')
  })
})

describe('every line', () => {
  it('carries event (= kind), subsystem "pack", level as a word, its Cloud Logging severity, an ISO time and a message', () => {
    const { log, lines } = logToFile()
    log.info('call', { target: 'tool', id: 'echo', toolId: 'echo', outcome: 'ok', durationMs: 3 })
    log.info('listening', { port: 8080, packId: 'hello', artifactVersion: '1' })
    log.warn('worker-replaced', { reason: 'deadline', id: 'slow' })
    log.error('boot-failed', { problems: ['Missing module: a.js'] })
    const written = lines()
    expect(written.map((l) => [l.kind, l.event, l.subsystem, l.level, l.severity])).toEqual([
      ['call', 'call', 'pack', 'info', 'INFO'],
      ['listening', 'listening', 'pack', 'info', 'INFO'],
      ['worker-replaced', 'worker-replaced', 'pack', 'warn', 'WARNING'],
      ['boot-failed', 'boot-failed', 'pack', 'error', 'ERROR'],
    ])
    for (const line of written) {
      expect(line.time).toMatch(ISO)
      expect(typeof line.message).toBe('string')
    }
    expect(written.map((l) => l.message)).toEqual([
      'call to tool echo: ok in 3 ms',
      'listening on port 8080: pack hello 1',
      'worker replaced (deadline) after running slow',
      'boot failed: Missing module: a.js',
    ])
  })

  it('has a message of its own for each kind of the contract, naming what the fields say', () => {
    expect(messageOf('listening', { port: 0, packId: 'p', artifactVersion: 'v', metricsPort: 9090 })).toBe(
      'listening on port 0: pack p v, metrics on port 9090',
    )
    expect(messageOf('config-invalid', { problems: ['a', 'b', 'c', 'd'] })).toBe('configuration invalid: a; b (and 2 more)')
    expect(messageOf('boot-failed', { problems: ['x'], reload: true })).toBe('reload failed, the previous pack keeps serving: x')
    expect(messageOf('missing-env', { check: 'strict', names: ['A', 'B'] })).toBe('required env missing, not ready until it is set: A, B')
    expect(messageOf('missing-env', { check: 'warn', names: ['A'] })).toBe('required env missing, serving anyway (env check warn): A')
    expect(messageOf('env-dropped', { names: ['X'] })).toBe('env withheld from pack code by the env filter: X')
    expect(messageOf('reloaded', { packId: 'p', artifactVersion: 'v2', indexHash: 'sha256:ab' })).toBe('reloaded: pack p v2 (sha256:ab)')
    expect(messageOf('reloaded', { packId: 'p', artifactVersion: 'v2', indexHash: 'sha256:ab', changed: ['lib/a.ts', 'tools/b.ts'] })).toBe(
      'reloaded: pack p v2 (sha256:ab) after a change to lib/a.ts, tools/b.ts',
    )
    expect(messageOf('worker-replaced', { reason: 'crash' })).toBe('worker replaced (crash)')
    expect(messageOf('draining', undefined)).toMatch(/^draining: /)
    expect(messageOf('stopped', undefined)).toBe('stopped')
    expect(messageOf('internal-error', { error: 'boom' })).toBe('internal error: boom')
  })
})

describe('traceparent', () => {
  it('a valid W3C traceparent gives its trace id and parent span id', () => {
    expect(traceParentOf(`00-${TRACE}-${PARENT}-01`)).toEqual({ traceId: TRACE, parentId: PARENT })
    expect(traceParentOf(`00-${TRACE}-${PARENT}-00`)).toEqual({ traceId: TRACE, parentId: PARENT })
    // A later version may carry more after the flags; it is read as version 00.
    expect(traceParentOf(`01-${TRACE}-${PARENT}-01-what-comes-later`)).toEqual({ traceId: TRACE, parentId: PARENT })
    expect(traceParentOf(`cc-${TRACE}-${PARENT}-01`)).toEqual({ traceId: TRACE, parentId: PARENT })
  })

  it('an invalid traceparent is ignored', () => {
    for (const invalid of [
      `ff-${TRACE}-${PARENT}-01`, // version ff is forbidden
      `0-${TRACE}-${PARENT}-01`,
      `0g-${TRACE}-${PARENT}-01`,
      `00-${'0'.repeat(32)}-${PARENT}-01`, // all-zero trace id
      `00-${TRACE}-${'0'.repeat(16)}-01`, // all-zero parent id
      `00-${TRACE.toUpperCase()}-${PARENT}-01`, // uppercase
      `00-${TRACE}-${PARENT.toUpperCase()}-01`,
      `00-${TRACE}-${PARENT}-0A`,
      `00-${TRACE.slice(1)}-${PARENT}-01`,
      `00-${TRACE}-${PARENT.slice(1)}-01`,
      `00-${TRACE}-${PARENT}-1`,
      `00-${TRACE}-${PARENT}-01-extra`, // version 00 is exactly 55 characters
      `01-${TRACE}-${PARENT}-01extra`,
      `00_${TRACE}_${PARENT}_01`,
      '',
    ]) {
      expect(traceParentOf(invalid), invalid).toBeUndefined()
    }
    expect(traceParentOf(undefined)).toBeUndefined()
    expect(traceParentOf([`00-${TRACE}-${PARENT}-01`, `00-${TRACE}-${PARENT}-01`])).toBeUndefined()
  })

  it("a call line carries the caller's traceId and a span id of its own, fresh for every call", () => {
    const headers = { traceparent: `00-${TRACE}-${PARENT}-01` }
    const first = callFields(headers, undefined)
    const second = callFields(headers, undefined)
    expect(first.traceId).toBe(TRACE)
    expect(first.spanId).toMatch(/^[\da-f]{16}$/)
    expect(first.spanId).not.toBe(PARENT)
    expect(second.spanId).not.toBe(first.spanId)
  })

  it('a call whose traceparent is invalid or missing carries neither traceId nor spanId', () => {
    for (const headers of [{}, { traceparent: `00-${'0'.repeat(32)}-${PARENT}-01` }, { traceparent: 'garbage' }]) {
      const fields = callFields(headers, undefined)
      expect(fields).not.toHaveProperty('traceId')
      expect(fields).not.toHaveProperty('spanId')
    }
  })

  it("span ids are 16 lowercase hex, never all zeros and never the parent's, across refills of the random block", () => {
    const seen = new Set<string>()
    for (let i = 0; i < 2000; i++) {
      const id = newSpanId(PARENT)
      expect(id).toMatch(/^[\da-f]{16}$/)
      expect(id).not.toBe(PARENT)
      expect(id).not.toBe('0'.repeat(16))
      seen.add(id)
    }
    expect(seen.size).toBe(2000)
  })
})
