// A body refused as too large is often still on its way: the client writes it while the 413
// goes out. Closing a connection with unread bytes makes the kernel reset it, and a client
// still writing then sees EPIPE or ECONNRESET in place of the 413. So the rest of a refused
// body is read and dropped, within bounds; past them the connection is cut. A client that
// asked for its connection to be closed has it closed once its body is in.
import type { IncomingMessage } from 'node:http'

export type DrainBounds = { bytes: number; ms: number }

/** How much of a refused body is read and dropped, and for how long, before the connection is cut. */
export const DRAIN_BOUNDS: DrainBounds = { bytes: 64 * 1024 * 1024, ms: 5_000 }

/** The client asked that its connection end with this request (`Connection: close`, or HTTP/1.0 without keep-alive). */
export function asksToClose(incoming: IncomingMessage): boolean {
  const tokens = (incoming.headers.connection ?? '')
    .toLowerCase()
    .split(',')
    .map((t) => t.trim())
  if (tokens.includes('close')) return true
  return incoming.httpVersion === '1.0' && !tokens.includes('keep-alive')
}

export function drainRefused(incoming: IncomingMessage, bounds: DrainBounds = DRAIN_BOUNDS): void {
  if (incoming.complete || incoming.destroyed) return
  const closeAfter = asksToClose(incoming)
  let seen = 0
  const done = () => {
    clearTimeout(timer)
    incoming.off('data', onData)
  }
  const cut = () => {
    done()
    incoming.socket?.destroy()
  }
  const onData = (chunk: Buffer) => {
    seen += chunk.length
    if (seen > bounds.bytes) cut()
  }
  const timer = setTimeout(cut, bounds.ms)
  timer.unref()
  incoming.on('data', onData)
  incoming.once('end', () => {
    done()
    if (closeAfter) incoming.socket?.end()
  })
  incoming.once('close', done)
  incoming.resume()
}
