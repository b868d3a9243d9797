// The bounds on draining a refused body: a client that keeps sending past them, or stops
// sending before its body ends, has its connection cut rather than held.
import { createServer, type Server } from 'node:http'
import { connect, type AddressInfo } from 'node:net'
import { afterEach, describe, expect, it } from 'vitest'
import { drainRefused, type DrainBounds } from '../../src/http/drain-refused.js'

let server: Server | undefined
afterEach(() => new Promise<void>((resolve) => (server ? server.close(() => resolve()) : resolve())))

function refusingServer(bounds: DrainBounds): Promise<number> {
  server = createServer((req, res) => {
    drainRefused(req, res, bounds)
    res.writeHead(413, { 'content-type': 'application/json' }).end('{"error":"Request body too large"}')
  })
  return new Promise((resolve) => server!.listen(0, '127.0.0.1', () => resolve((server!.address() as AddressInfo).port)))
}

/** Sends a request declaring `declared` bytes, then `chunks` of 64 KiB each `everyMs`; resolves how it ended. */
function send(port: number, declared: number, chunks: number, everyMs: number): Promise<{ text: string; sent: number; ms: number; closed: boolean }> {
  return new Promise((resolve) => {
    const started = performance.now()
    const socket = connect(port, '127.0.0.1')
    const chunk = Buffer.alloc(64 * 1024, 0x20)
    let text = ''
    let sent = 0
    let closed = false
    const timer = setInterval(() => {
      if (sent >= chunks) return
      sent++
      socket.write(chunk)
    }, everyMs)
    const end = () => {
      clearInterval(timer)
      resolve({ text, sent, ms: performance.now() - started, closed })
    }
    socket.on('data', (d) => (text += d.toString('latin1')))
    socket.on('error', () => undefined)
    socket.on('close', () => {
      closed = true
      end()
    })
    setTimeout(() => {
      socket.destroy()
      closed = false
      end()
    }, 5_000).unref()
    socket.write(`POST / HTTP/1.1\r\nhost: x\r\ncontent-length: ${declared}\r\n\r\n`)
  })
}

describe('draining a refused body', () => {
  it('a client still sending past the byte bound has its connection cut', async () => {
    const port = await refusingServer({ bytes: 1024 * 1024, ms: 60_000 })
    const got = await send(port, 64 * 1024 * 1024, 1024, 1)
    expect(got.text).toMatch(/^HTTP\/1\.1 413 /)
    expect(got.closed).toBe(true)
    // Cut soon after 1 MiB (16 chunks), far before the 64 MiB it meant to send.
    expect(got.sent).toBeLessThan(200)
  })
  it('a client that stops sending before its body ends has its connection cut at the time bound', async () => {
    const port = await refusingServer({ bytes: 64 * 1024 * 1024, ms: 300 })
    const got = await send(port, 64 * 1024 * 1024, 2, 1)
    expect(got.text).toMatch(/^HTTP\/1\.1 413 /)
    expect(got.closed).toBe(true)
    expect(got.ms).toBeGreaterThanOrEqual(250)
    expect(got.ms).toBeLessThan(4_000)
  })
})
