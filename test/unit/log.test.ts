// The service log (src/log.ts): a `call` line is written by hand, not by pino, for speed; it
// must be the very line pino would have written, and reach stderr before any later line.
import { mkdtempSync, openSync, readFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { pino } from 'pino'
import { describe, expect, it } from 'vitest'
import { createLog } from '../../src/log.js'

function pinoLine(fields: Record<string, unknown>): string {
  let out = ''
  const logger = pino({ base: { pid: process.pid }, timestamp: pino.stdTimeFunctions.isoTime }, { write: (s: string) => (out += s) })
  logger.info(fields)
  return out
}

const withoutTime = (line: string) => line.replace(/"time":"[^"]+"/, '"time":"T"')

describe('call lines', () => {
  it('are the JSON lines pino writes, field for field and in order, and are flushed before the next lifecycle line', () => {
    const path = join(mkdtempSync(join(tmpdir(), 'kph-log-')), 'log')
    const log = createLog(openSync(path, 'w'))
    const fields = { target: 'tool', id: 'weird "id" \\ é✓\n', outcome: 'ok', durationMs: 1.25, tenantId: 't', traceId: '0af7651916cd43dd8448eb211c80319c' }
    log.info('call', fields)
    log.info('call', {})
    log.info('listening', { port: 8080 })
    const lines = readFileSync(path, 'utf8').split('\n')
    expect(lines).toHaveLength(4)
    expect(withoutTime(lines[0] as string)).toBe(withoutTime(pinoLine({ kind: 'call', ...fields }).trimEnd()))
    expect(withoutTime(lines[1] as string)).toBe(withoutTime(pinoLine({ kind: 'call' }).trimEnd()))
    expect(JSON.parse(lines[0] as string).time).toMatch(/^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$/)
    expect(JSON.parse(lines[2] as string)).toMatchObject({ level: 30, kind: 'listening', port: 8080 })
  })
})
