// A raw HTTP/1.1 client for the reliability suite: writes exactly the bytes it is given (bad
// headers, pipelining, bodies that stop or trickle) and parses whatever comes back, so nothing
// a polite client library would refuse to send escapes the test. Loopback, bounded in time.
import { connect, type Socket } from 'node:net'

export type RawAnswer = { status: number; headers: Record<string, string[]>; body: string }

/** What to write: bytes, or a pause before the next piece (a slow or stalled client). */
export type Piece = string | Buffer | { pauseMs: number } | { end: true } | { destroy: true }

export type Exchange = {
  answers: RawAnswer[]
  /** The server closed the connection (FIN or reset) before the exchange ended. */
  closed: boolean
  /** The exchange hit its time bound with the connection still open and answers missing. */
  timedOut: boolean
  /** A socket error other than the server closing (e.g. ECONNREFUSED). */
  error?: string
  /** Bytes that arrived but do not parse as HTTP answers. */
  garbage?: string
  elapsedMs: number
}

export type ExchangeOptions = {
  port: number
  /** The methods of the requests written, in order: a HEAD answer has no body. */
  methods: string[]
  /** Stop once this many answers arrived (defaults to methods.length). */
  expect?: number
  timeoutMs: number
}

const HOST = '127.0.0.1'

/** Parses as many complete answers as `buf` holds, skipping 1xx interim answers. */
export function parseAnswers(buf: Buffer, methods: string[], closed: boolean): { answers: RawAnswer[]; rest: Buffer; garbage?: string } {
  const answers: RawAnswer[] = []
  let at = 0
  for (;;) {
    const headEnd = buf.indexOf('\r\n\r\n', at)
    if (headEnd === -1) break
    const head = buf.subarray(at, headEnd).toString('latin1').split('\r\n')
    const match = /^HTTP\/1\.[01] (\d{3})/.exec(head[0] ?? '')
    if (match === null) return { answers, rest: buf.subarray(at), garbage: buf.subarray(at, at + 200).toString('latin1') }
    const status = Number(match[1])
    const headers: Record<string, string[]> = {}
    for (const line of head.slice(1)) {
      const colon = line.indexOf(':')
      if (colon === -1) continue
      const name = line.slice(0, colon).trim().toLowerCase()
      headers[name] ??= []
      headers[name].push(line.slice(colon + 1).trim())
    }
    let bodyStart = headEnd + 4
    if (status >= 100 && status < 200) {
      at = bodyStart
      continue
    }
    const method = methods[answers.length] ?? 'GET'
    let body: Buffer
    const length = headers['content-length']?.[0]
    const chunked = (headers['transfer-encoding']?.[0] ?? '').toLowerCase().includes('chunked')
    if (method === 'HEAD' || status === 204 || status === 304) {
      body = Buffer.alloc(0)
    } else if (chunked) {
      const parts: Buffer[] = []
      let p = bodyStart
      let complete = false
      for (;;) {
        const lineEnd = buf.indexOf('\r\n', p)
        if (lineEnd === -1) break
        const size = parseInt(buf.subarray(p, lineEnd).toString('latin1'), 16)
        if (Number.isNaN(size)) return { answers, rest: buf.subarray(at), garbage: 'bad chunk size' }
        if (size === 0) {
          const trailerEnd = buf.indexOf('\r\n\r\n', lineEnd)
          if (trailerEnd === -1 && buf.indexOf('\r\n', lineEnd + 2) !== lineEnd + 2) break
          p = trailerEnd === -1 ? lineEnd + 4 : trailerEnd + 4
          complete = true
          break
        }
        if (buf.length < lineEnd + 2 + size + 2) break
        parts.push(buf.subarray(lineEnd + 2, lineEnd + 2 + size))
        p = lineEnd + 2 + size + 2
      }
      if (!complete) break
      body = Buffer.concat(parts)
      answers.push({ status, headers, body: body.toString('utf8') })
      at = p
      continue
    } else if (length !== undefined) {
      const n = Number(length)
      if (buf.length < bodyStart + n) break
      body = buf.subarray(bodyStart, bodyStart + n)
      bodyStart += n
    } else {
      // Delimited by the close of the connection.
      if (!closed) break
      body = buf.subarray(bodyStart)
      bodyStart = buf.length
    }
    answers.push({ status, headers, body: body.toString('utf8') })
    at = bodyStart
  }
  return { answers, rest: buf.subarray(at) }
}

/** Writes the pieces in order on one connection and collects the answers. Never rejects. */
export function exchange(pieces: Piece[], options: ExchangeOptions): Promise<Exchange> {
  const started = performance.now()
  const expect = options.expect ?? options.methods.length
  return new Promise((resolve) => {
    const socket: Socket = connect({ host: HOST, port: options.port })
    let buf: Buffer = Buffer.alloc(0)
    let closed = false
    let finished = false
    let error: string | undefined
    const timers: NodeJS.Timeout[] = []
    const finish = (timedOut: boolean) => {
      if (finished) return
      finished = true
      for (const t of timers) clearTimeout(t)
      const parsed = parseAnswers(buf, options.methods, closed)
      socket.destroy()
      resolve({ answers: parsed.answers, closed, timedOut, error, garbage: parsed.garbage, elapsedMs: performance.now() - started })
    }
    timers.push(setTimeout(() => finish(true), options.timeoutMs))
    socket.on('data', (d: Buffer) => {
      buf = buf.length === 0 ? d : Buffer.concat([buf, d])
      if (parseAnswers(buf, options.methods, false).answers.length >= expect) finish(false)
    })
    socket.on('error', (err: NodeJS.ErrnoException) => {
      if (err.code !== 'ECONNRESET' && err.code !== 'EPIPE') error = err.code ?? err.message
      closed = true
    })
    socket.on('close', () => {
      closed = true
      finish(false)
    })
    socket.once('connect', () => {
      let i = 0
      const next = () => {
        if (finished || socket.destroyed) return
        while (i < pieces.length) {
          const piece = pieces[i++] as Piece
          if (typeof piece === 'string' || Buffer.isBuffer(piece)) {
            socket.write(piece)
            continue
          }
          if ('pauseMs' in piece) {
            timers.push(setTimeout(next, piece.pauseMs))
            return
          }
          if ('end' in piece) socket.end()
          else socket.destroy()
          if ('destroy' in piece) finish(false)
          return
        }
      }
      next()
    })
  })
}

/** One request as text: request line, headers as given (duplicates and all), body. Written as UTF-8. */
export function rawRequest(method: string, target: string, headers: Array<[string, string]>, body = ''): string {
  return [`${method} ${target} HTTP/1.1`, ...headers.map(([k, v]) => `${k}: ${v}`), '', ''].join('\r\n') + body
}

/** A well-formed request with Host and Content-Length filled in. */
export function simpleRequest(method: string, target: string, headers: Record<string, string>, body = ''): string {
  const list: Array<[string, string]> = [['Host', `${HOST}`], ...Object.entries(headers)]
  if (body !== '' || method === 'POST') list.push(['Content-Length', String(Buffer.byteLength(body))])
  return rawRequest(method, target, list, body)
}
