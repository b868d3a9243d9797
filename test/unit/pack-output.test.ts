// Pack code's stdout and stderr reach the service's as whole lines of their own
// (src/pool/pack-output.ts), each written in one piece no longer than PIPE_BUF: half a line can
// no longer be glued to the host's next log line; and no faster than a pipe's budget.
import { closeSync, mkdtempSync, openSync, readFileSync, rmSync, statSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { PassThrough } from 'node:stream'
import { describe, expect, it, onTestFinished } from 'vitest'
import { passLines } from '../../src/pool/pack-output.js'
import { within } from '../helpers/host.js'

/** A source passed on to a file, and what the file holds once the source has ended and it holds `bytes`. */
function passedOn(): { source: PassThrough; written: (bytes: number) => Promise<string> } {
  const dir = mkdtempSync(join(tmpdir(), 'kph-pack-output-'))
  const fd = openSync(join(dir, 'out'), 'w')
  onTestFinished(() => {
    closeSync(fd)
    rmSync(dir, { recursive: true, force: true })
  })
  const source = new PassThrough()
  passLines(source, fd)
  const written = async (bytes: number) => {
    await new Promise((resolve) => source.once('end', resolve))
    // Writes go through the thread pool and may still be landing: until the file is that long,
    // or what is there is checked (and falls short).
    await within(5_000, () => statSync(join(dir, 'out')).size >= bytes)
    return readFileSync(join(dir, 'out'), 'utf8')
  }
  return { source, written }
}

describe('pack output is passed on as whole lines', () => {
  it('half a line left at the end of its stream is ended with a newline', async () => {
    const { source, written } = passedOn()
    source.write('x')
    source.end()
    source.resume()
    expect(await written(2)).toBe('x\n')
  })

  it('a line split over chunks arrives whole, and lines keep their order', async () => {
    const { source, written } = passedOn()
    source.write('one\ntw')
    source.write('o\nthr')
    source.end('ee\n')
    expect(await written(14)).toBe('one\ntwo\nthree\n')
  })

  it('a line longer than PIPE_BUF is cut into lines of at most 4096 bytes, never inside a character', async () => {
    const { source, written } = passedOn()
    const long = 'é'.repeat(5000) // 10,000 bytes
    source.end(`${long}\nshort\n`)
    // The bytes given, at least: the last piece (with 'short') is longer than the newlines cutting adds.
    const lines = (await written(Buffer.byteLength(`${long}\nshort\n`))).split('\n')
    expect(lines.at(-1)).toBe('')
    expect(lines.at(-2)).toBe('short')
    const cut = lines.slice(0, -2)
    expect(cut.length).toBeGreaterThan(2)
    for (const line of cut) expect(Buffer.byteLength(`${line}\n`)).toBeLessThanOrEqual(4096)
    expect(cut.join('')).toBe(long)
  })

  it('a pipe that prints 6 MiB at once is passed on no faster than its budget of 4 MiB a second after the first 4 MiB, and every byte arrives', async () => {
    const { source, written } = passedOn()
    // In chunks of 64 KiB, as a pipe gives them.
    const chunk = `${'x'.repeat(1023)}\n`.repeat(64)
    const started = performance.now()
    for (let i = 0; i < 96; i++) source.write(chunk)
    source.end()
    const out = await written(6 * 1024 * 1024)
    expect(performance.now() - started).toBeGreaterThan(400)
    expect(out.length).toBe(6 * 1024 * 1024)
  })
})
