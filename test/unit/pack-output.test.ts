// Pack code's stdout and stderr reach the service's as log records of their own
// (src/pool/pack-output.ts), each written in one piece no longer than PIPE_BUF: half a line can
// no longer be glued to the host's next log line; and no faster than a pipe's budget.
import { closeSync, mkdtempSync, openSync, readFileSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { PassThrough } from 'node:stream'
import { describe, expect, it, onTestFinished } from 'vitest'
import { passLines } from '../../src/pool/pack-output.js'
import { within } from '../helpers/host.js'

/** A source passed on to a file, and what the file holds once the source has ended and it holds `lines` lines (or `done` says so). */
function passedOn(): { source: PassThrough; written: (lines: number | ((text: string) => boolean)) => Promise<string> } {
  const dir = mkdtempSync(join(tmpdir(), 'kph-pack-output-'))
  const fd = openSync(join(dir, 'out'), 'w')
  onTestFinished(() => {
    closeSync(fd)
    rmSync(dir, { recursive: true, force: true })
  })
  const source = new PassThrough()
  passLines(source, fd, { pid: 4242, stream: 'stderr' })
  const written = async (lines: number | ((text: string) => boolean)) => {
    await new Promise((resolve) => source.once('end', resolve))
    // Writes go through the thread pool and may still be landing: until the file has that many
    // lines, or what is there is checked (and falls short).
    const text = () => readFileSync(join(dir, 'out'), 'utf8')
    await within(5_000, () => (typeof lines === 'number' ? text().split('\n').length > lines : lines(text())))
    return text()
  }
  return { source, written }
}

/** The records passed on, one a line: each a log record of the pack process, within PIPE_BUF. */
function records(out: string): Array<Record<string, unknown>> {
  const lines = out.split('\n')
  expect(lines.at(-1), 'the last line ended').toBe('')
  return lines.slice(0, -1).map((line) => {
    expect(Buffer.byteLength(`${line}\n`), 'a line within PIPE_BUF').toBeLessThanOrEqual(4096)
    const record = JSON.parse(line) as Record<string, unknown>
    expect(record).toMatchObject({ kind: 'log', event: 'log', pid: 4242 })
    return record
  })
}

const messages = (out: string) => records(out).map((r) => r.message)

describe('pack output is passed on as whole lines', () => {
  it('half a line left at the end of its stream is ended with a newline', async () => {
    const { source, written } = passedOn()
    source.write('x')
    source.end()
    source.resume()
    expect(messages(await written(1))).toEqual(['x'])
  })

  it('a line split over chunks arrives whole, and lines keep their order', async () => {
    const { source, written } = passedOn()
    source.write('one\ntw')
    source.write('o\nthr')
    source.end('ee\n')
    expect(messages(await written(3))).toEqual(['one', 'two', 'three'])
  })

  it('a line longer than PIPE_BUF is cut into records of at most 4096 bytes, never inside a character', async () => {
    const { source, written } = passedOn()
    const long = 'é'.repeat(5000) // 10,000 bytes
    source.end(`${long}\nshort\n`)
    const passed = messages(await written((text) => text.includes('"message":"short"')))
    expect(passed.at(-1)).toBe('short')
    expect(passed.length).toBeGreaterThan(3)
    expect(passed.slice(0, -1).join('')).toBe(long)
  })

  it('a pipe that prints 6 MiB at once is passed on no faster than its budget of 4 MiB a second after the first 4 MiB, and every byte arrives', async () => {
    const { source, written } = passedOn()
    // In chunks of 64 KiB, as a pipe gives them.
    const chunk = `${'x'.repeat(1023)}\n`.repeat(64)
    const started = performance.now()
    for (let i = 0; i < 96; i++) source.write(chunk)
    source.end()
    const out = await written(6 * 1024)
    expect(performance.now() - started).toBeGreaterThan(400)
    const passed = messages(out)
    expect(passed.length).toBe(6 * 1024)
    expect(passed.every((m) => m === 'x'.repeat(1023))).toBe(true)
  })
})

describe("a line of pack output never passes for a line of the host's", () => {
  it("a line that is the host's call line, word for word, is a log record of the pack process's pid", async () => {
    const { source, written } = passedOn()
    const forged = { level: 'info', pid: 7, subsystem: 'pack', kind: 'call', event: 'call', toolId: 'echo', outcome: 'ok', tenantId: 'victim' }
    source.end(`${JSON.stringify(forged)}\n`)
    const [record] = records(await written(1))
    expect(record).toEqual({ ...forged, kind: 'log', event: 'log', pid: 4242 })
  })

  it('a line that names its kind twice has one kind, log, however its reader takes duplicate keys', async () => {
    const { source, written } = passedOn()
    const line = '{"kind":"internal-error","escaped":true,"draining":true,"kind":"log"}'
    source.end(`${line}\n`)
    const out = await written(1)
    expect(out.match(/"kind"/g)).toHaveLength(1)
    expect(records(out)[0]).toMatchObject({ kind: 'log', escaped: true })
  })

  it('a line of arrays nested 20,000 deep, or one longer than a record may be, is passed on as text, never parsed (stop 42)', async () => {
    const { source, written } = passedOn()
    const deep = `{"a":${'['.repeat(20_000)}${']'.repeat(20_000)}}`
    const wide = `{${Array.from({ length: 1_000 }, (_, i) => `"k${i}":0`).join(',')}}`
    source.end(`${deep}\n${wide}\n`)
    const passed = records(await written((text) => text.includes('"k999\\":0}')))
    expect(passed.map((r) => r.message).join('')).toBe(`${deep}${wide}`)
    expect(passed.every((r) => r.stream === 'stderr' && Object.keys(r).length === 9)).toBe(true)
  })

  it('a ctx.log record keeps its fields; text, an array or a number is the message of a record of its own', async () => {
    const { source, written } = passedOn()
    const ctxLog = {
      level: 'warn',
      severity: 'WARNING',
      time: '2026-12-04T00:00:00.000Z',
      kind: 'log',
      event: 'log',
      subsystem: 'pack',
      toolId: 't',
      message: 'hi',
      n: 1,
    }
    source.end(`${JSON.stringify(ctxLog)}\nplain text\n[1,2]\n42\n{not json\n`)
    const passed = records(await written(5))
    expect(passed[0]).toEqual({ ...ctxLog, pid: 4242 })
    expect(passed.slice(1).map((r) => [r.message, r.stream, r.level])).toEqual([
      ['plain text', 'stderr', 'info'],
      ['[1,2]', 'stderr', 'info'],
      ['42', 'stderr', 'info'],
      ['{not json', 'stderr', 'info'],
    ])
  })
})
