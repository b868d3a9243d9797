// A body refused as too large is often still on its way: the client writes it while the 413
// goes out. Closing a connection with unread bytes makes the kernel reset it, and a client
// still writing then sees EPIPE or ECONNRESET in place of the 413. So the rest of a refused
// body is read and dropped, within bounds; past them the connection is cut. A client that
// asked for its connection to be closed has it closed once its body is in.
import type { IncomingMessage, ServerResponse } from 'node:http'

export type DrainBounds = { bytes: number; ms: number }

/** How much of a refused body is read and dropped, and for how long, before the connection is cut. */
export const DRAIN_BOUNDS: DrainBounds = { bytes: 64 * 1024 * 1024, ms: 5_000 }

/** The client asked that its connection end with this request (`Connection: close`, or HTTP/1.0 without keep-alive). */
function asksToClose(incoming: IncomingMessage): boolean {
  const tokens = (incoming.headers.connection ?? '')
    .toLowerCase()
    .split(',')
    .map((t) => t.trim())
  if (tokens.includes('close')) return true
  return incoming.httpVersion === '1.0' && !tokens.includes('keep-alive')
}

/**
 * Drains what is left of `incoming`'s body, if any is; `answer` is its 413. `whole`: the body was
 * all in already; `then-close`: the client asked to close, which the drain does once the body is
 * in and the answer written (so the answer must not make Node close at once).
 */
export function drainRefused(incoming: IncomingMessage, answer: ServerResponse, bounds: DrainBounds = DRAIN_BOUNDS): 'whole' | 'drains' | 'then-close' {
  if (incoming.complete || incoming.destroyed) return 'whole'
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
  const bodyIn = new Promise<void>((resolve) => incoming.once('end', resolve))
  void bodyIn.then(done)
  incoming.once('close', done)
  incoming.resume()
  if (!asksToClose(incoming)) return 'drains'
  // Closed only once the body is in and the 413 written, in whichever order those come.
  void Promise.all([bodyIn, new Promise((resolve) => answer.once('close', resolve))]).then(() => incoming.socket?.end())
  return 'then-close'
}
