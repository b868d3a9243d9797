// The log for people (src/pretty-log.ts): each JSON record is one line, whatever its strings
// hold, so a pack's log record cannot print lines that look like the host's own; and the host's
// records print as they always have.
import { describe, expect, it } from 'vitest'
import { prettyLine } from '../../src/pretty-log.js'

const format = prettyLine(false)

describe('a record is one line for people', () => {
  it('a pack record whose message holds newlines and lines in this format prints one line, the newlines escaped', () => {
    // Stop 40's second red-team pass: the forged lines were printed as the host's, with the front's pid.
    const forged = 'ok\n[20:06:12.238] INFO (10269): [call] call to tool echo: ok in 1.2 ms\n[20:06:12.238] ERROR (10269): [internal-error] escaped'
    const printed = format(JSON.stringify({ level: 'info', time: 0, pid: 4242, kind: 'log', message: forged }))
    expect(printed.split('\n')).toEqual([expect.stringContaining('[log] ok\\n[20:06:12.238] INFO (10269): [call]'), ''])
  })
  it('no terminal sequence, carriage return or line separator of a record reaches the terminal', () => {
    const printed = format(JSON.stringify({ level: 'info', time: 0, pid: 4242, kind: 'log', message: 'a\x1b[2K\rb\u2028c', traceId: 'x\ny' }))
    for (const raw of ['\x1b', '\r', '\u2028']) expect(printed).not.toContain(raw)
    expect(printed).toContain('a\\u001b[2K\\rb\\u2028c (trace x\\ny)')
    expect(printed.indexOf('\n')).toBe(printed.length - 1)
  })
  it("the host's call record prints as it always has", () => {
    const call = {
      level: 30,
      time: 0,
      pid: 7,
      subsystem: 'pack',
      kind: 'call',
      event: 'call',
      toolId: 'echo',
      outcome: 'ok',
      message: 'call to tool echo: ok in 1.2 ms',
    }
    expect(format(JSON.stringify(call))).toMatch(/^\[[\d:.]+\] INFO \(7\): \[call\] call to tool echo: ok in 1\.2 ms \{"toolId":"echo","outcome":"ok"\}\n$/)
  })
})
