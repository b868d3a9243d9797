// One request written whole on a fresh connection before anything is read, as a client that
// sends its request and then reads: what a server that closes early does to such a client.
import { connect } from 'node:net'

/** The head of a POST /v1/invoke declaring `length` bytes of body. */
export function invokeHead(length: number, token: string): string {
  return `POST /v1/invoke HTTP/1.1\r\nhost: x\r\ncontent-type: application/json\r\nkindgi-pack-token: ${token}\r\ncontent-length: ${length}\r\n\r\n`
}

export type Sent = { text: string; error?: string; closed: boolean }

/**
 * Writes `head` and then the body on a fresh connection, reading nothing until all of it is
 * written (as a client that sends its request whole, then reads), then reads until `until` is
 * seen, or until the server closes. A paced body goes out a piece at a time.
 */
export function rawExchange(port: number, head: string, body: Buffer | { bytes: number; piece: number; everyMs: number }, until?: RegExp): Promise<Sent> {
  return new Promise((resolve) => {
    const socket = connect(port, '127.0.0.1')
    let text = ''
    let closed = false
    let done = false
    const finish = (error?: string) => {
      if (done) return
      done = true
      socket.destroy()
      resolve({ text, error, closed })
    }
    socket.on('data', (d) => {
      text += d.toString('latin1')
      if (until?.test(text) === true) finish()
    })
    socket.on('error', (err: NodeJS.ErrnoException) => finish(err.code))
    socket.on('close', () => {
      closed = true
      finish()
    })
    socket.pause()
    socket.write(head)
    const written = (err?: Error | null) => (err ? finish((err as NodeJS.ErrnoException).code) : socket.resume())
    if (Buffer.isBuffer(body)) {
      socket.write(body, written)
      return
    }
    let sent = 0
    const next = () => {
      if (done) return
      if (sent >= body.bytes) return written()
      sent += body.piece
      socket.write(Buffer.alloc(body.piece, 0x20), (err) => (err ? written(err) : setTimeout(next, body.everyMs)))
    }
    next()
  })
}
