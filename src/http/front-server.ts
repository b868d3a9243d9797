// The Node HTTP server around the Hono app: its timeouts and connection bound (README,
// configuration), and a JSON answer for every request the app never sees (not valid HTTP,
// too slow, headers too large), so nothing on the wire answers without a JSON body. Past the
// bound a new connection takes the place of the oldest one that never carried the token
// (proven-connections.ts); with none such, it is closed unanswered.
import { getRequestListener, RequestError } from '@hono/node-server'
import { createServer, STATUS_CODES, type IncomingMessage, type Server, type ServerResponse } from 'node:http'
import type { Socket } from 'node:net'
import type { FrontLimits } from '../config.js'
import { boundConnections } from './connection-bound.js'
import { isProven } from './proven-connections.js'

type Fetch = Parameters<typeof getRequestListener>[0]

/** How often Node looks for connections past their headers or request timeout. */
function checkEveryMs(headersTimeoutMs: number): number {
  return Math.max(50, Math.min(1_000, Math.floor(headersTimeoutMs / 4)))
}

function jsonResponse(status: number, error: string): string {
  const body = JSON.stringify({ error })
  return (
    `HTTP/1.1 ${status} ${STATUS_CODES[status]}\r\nContent-Type: application/json\r\n` +
    `Content-Length: ${Buffer.byteLength(body)}\r\nConnection: close\r\n\r\n${body}`
  )
}

/** Why Node refused a request before the app saw it, as a status and the error text. */
export function clientErrorAnswer(code: string | undefined): { status: 400 | 408 | 431; error: string } {
  if (code === 'HPE_HEADER_OVERFLOW') return { status: 431, error: 'Request headers too large' }
  if (code === 'ERR_HTTP_REQUEST_TIMEOUT') return { status: 408, error: 'Request not received in time' }
  return { status: 400, error: 'Bad request: not valid HTTP/1.1' }
}

/** Ends a socket after `text`, and destroys it if the peer never closes its side. */
function closeWith(socket: Socket, text: string): void {
  socket.end(text)
  setTimeout(() => socket.destroy(), 2_000).unref()
}

export function createFrontServer(fetch: Fetch, limits: FrontLimits): Server {
  const listener = getRequestListener(fetch, {
    // A request without a Host header is still routed; node-server needs a name to build its URL.
    hostname: 'localhost',
    // Its own drain of unread bodies cuts a connection after 0.5 s: the front drains a refused
    // body itself (drain-refused.ts); any other unread body Node reads and drops.
    autoCleanupIncoming: false,
    // node-server could not turn the request into a URL (a bad Host header or request target).
    errorHandler: (err) =>
      err instanceof RequestError
        ? Response.json({ error: `Bad request: ${err.message}` }, { status: 400, headers: { Connection: 'close' } })
        : Response.json({ error: 'The pack service failed to handle the request' }, { status: 500 }),
  })
  const server = createServer(
    {
      headersTimeout: limits.headersTimeoutMs,
      // A backstop for every body the app does not read itself (invoke bodies have their own timeout).
      requestTimeout: limits.headersTimeoutMs + limits.bodyTimeoutMs,
      connectionsCheckingInterval: checkEveryMs(limits.headersTimeoutMs),
      requireHostHeader: false,
    },
    listener,
  )
  server.keepAliveTimeout = limits.keepAliveTimeoutMs

  // Per socket: its latest request and how many answers are still open. Node refuses either
  // the latest request's body (the request is not complete) or a request after it, pipelined.
  // The first is answered at once, as long as nothing of its own answer went out; the second
  // after every open answer, never in the place of one: a client pairs answers with requests
  // in order.
  const sockets = new WeakMap<Socket, { latest: { req: IncomingMessage; res: ServerResponse }; open: number; after?: string }>()
  server.on('request', (req: IncomingMessage, res: ServerResponse) => {
    const socket = req.socket
    const known = sockets.get(socket)
    const state = known ?? { latest: { req, res }, open: 0 }
    if (known === undefined) sockets.set(socket, state)
    state.latest = { req, res }
    state.open++
    res.once('close', () => {
      state.open--
      if (state.open > 0 || state.after === undefined) return
      closeWith(socket, state.after)
      state.after = undefined
    })
  })
  // Busy or not: a connection without the token carries only probes and refusals, and one that
  // never reads its answers stays busy for good.
  boundConnections(server, limits.maxConnections, (socket) => !isProven(socket))
  /** Ends a socket with `text` once every answer still open on it has gone out. */
  const afterOpenAnswers = (socket: Socket, text: string) => {
    const state = sockets.get(socket)
    if (state !== undefined && state.open > 0) state.after = text
    else closeWith(socket, text)
  }
  server.on('clientError', (err: NodeJS.ErrnoException, socket: Socket) => {
    const state = sockets.get(socket)
    const inBody = state !== undefined && !state.latest.req.complete
    if (err.code === 'ECONNRESET' || !socket.writable || (inBody && state.latest.res.headersSent)) {
      socket.destroy()
      return
    }
    const { status, error } = clientErrorAnswer(err.code)
    if (inBody) closeWith(socket, jsonResponse(status, error))
    else afterOpenAnswers(socket, jsonResponse(status, error))
  })
  // An Expect other than 100-continue is ignored (RFC 9110 lets a server do so) rather than
  // answered with Node's bodyless 417: the request is served as if it had none.
  server.on('checkExpectation', (req, res) => server.emit('request', req, res))
  // CONNECT asks for a tunnel, which this service never opens.
  server.on('connect', (_req, socket: Socket) => afterOpenAnswers(socket, jsonResponse(400, 'Bad request: CONNECT is not served')))
  return server
}
