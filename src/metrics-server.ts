// The Prometheus scrape endpoint, on its own port so the protocol port keeps exactly the
// routes docs/spec/CONTRACT.md §2 defines. GET /metrics only; no token (keep the port where
// only scrapers reach). Its connections are bounded as the protocol port's are: pack code with
// network access can reach it too.
import { createServer, type Server } from 'node:http'
import type { Socket } from 'node:net'
import type { Registry } from 'prom-client'
import { boundConnections } from './http/connection-bound.js'

/** Connections at once: a scraper needs one or two. Past it, a new one closes the oldest. */
export const METRICS_MAX_CONNECTIONS = 16

export function startMetricsServer(registry: Registry, host: string | undefined, port: number): Promise<Server> {
  // One rendering at a time, shared by the scrapes that come while it runs.
  let rendering: Promise<string> | undefined
  const rendered = (): Promise<string> => {
    rendering ??= registry.metrics().finally(() => {
      rendering = undefined
    })
    return rendering
  }
  /** Sockets with an answer still open: a scraper sends its next request after the answer. */
  const answering = new WeakSet<Socket>()
  // A scrape is one small request: nothing keeps a connection long.
  const server = createServer({ headersTimeout: 10_000, requestTimeout: 20_000 }, (req, res) => {
    // Pipelined requests were each answered at once, with a rendering of their own, whether or
    // not the socket read them: a tool wrote thousands and read none, and the front spent its
    // event loop and a gigabyte on answers (a red-team pass, stop 38). No scraper pipelines.
    if (answering.has(req.socket)) {
      req.socket.destroy()
      return
    }
    answering.add(req.socket)
    res.once('close', () => answering.delete(req.socket))
    const path = (req.url ?? '/').split('?')[0]
    const answer = (status: number, body: Record<string, string>) => {
      res.writeHead(status, { 'Content-Type': 'application/json' }).end(JSON.stringify(body))
    }
    if (path !== '/metrics') return answer(404, { error: `No route ${path}` })
    if (req.method !== 'GET') return answer(405, { error: 'Use GET' })
    rendered().then(
      (text) => res.writeHead(200, { 'Content-Type': registry.contentType }).end(text),
      (err: Error) => answer(500, { error: `Metrics could not be collected: ${err.message}` }),
    )
  })
  server.keepAliveTimeout = 5_000
  boundConnections(server, METRICS_MAX_CONNECTIONS, () => true)
  return new Promise((resolve, reject) => {
    server.once('error', reject)
    server.listen(port, host, () => {
      server.off('error', reject)
      resolve(server)
    })
  })
}
