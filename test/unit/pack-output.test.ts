// Pack code's stdout and stderr reach the service's as whole lines of their own
// (src/pool/pack-output.ts), each written in one piece no longer than PIPE_BUF: half a line can
// no longer be glued to the host's next log line; and no faster than a pipe's budget.
import { closeSync, mkdtempSync, openSync, readFileSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { PassThrough } from 'node:stream'
import { describe, expect, it, onTestFinished } from 'vitest'
import { passLines } from '../../src/pool/pack-output.js'

/** A source passed on to a file, and what the file holds once the source has ended and the writes are done. */
function passedOn(): { source: PassThrough; written: () => Promise<string> } {
  const dir = mkdtempSync(join(tmpdir(), 'kph-pack-output-'))
  const fd = openSync(join(dir, 'out'), 'w')
  onTestFinished(() => {
    closeSync(fd)
    rmSync(dir, { recursive: true, force: true })
  })
  const source = new PassThrough()
  passLines(source, fd)
  const written = async () => {
    await new Promise((resolve) => source.once('end', resolve))
    await new Promise((resolve) => setTimeout(resolve, 50))
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
    expect(await written()).toBe('x\n')
  })

  it('a line split over chunks arrives whole, and lines keep their order', async () => {
    const { source, written } = passedOn()
    source.write('one\ntw')
    source.write('o\nthr')
    source.end('ee\n')
    expect(await written()).toBe('one\ntwo\nthree\n')
  })

  it('a line longer than PIPE_BUF is cut into lines of at most 4096 bytes, never inside a character', async () => {
    const { source, written } = passedOn()
    const long = 'é'.repeat(5000) // 10,000 bytes
    source.end(`${long}\nshort\n`)
    const lines = (await written()).split('\n')
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
    const out = await written()
    expect(performance.now() - started).toBeGreaterThan(400)
    expect(out.length).toBe(6 * 1024 * 1024)
  })
})
