// The Prometheus scrape endpoint, on its own port so the protocol port keeps exactly the
// routes docs/spec/CONTRACT.md §2 defines. GET /metrics only; no token (keep the port where
// only scrapers reach). Its connections are bounded as the protocol port's are: pack code with
// network access can reach it too.
import { createServer, type Server } from 'node:http'
import type { Registry } from 'prom-client'
import { boundConnections } from './http/connection-bound.js'

/** Connections at once: a scraper needs one or two. Past it, a new one closes the oldest. */
export const METRICS_MAX_CONNECTIONS = 16

export function startMetricsServer(registry: Registry, host: string | undefined, port: number): Promise<Server> {
  // A scrape is one small request: nothing keeps a connection long.
  const server = createServer({ headersTimeout: 10_000, requestTimeout: 20_000 }, (req, res) => {
    const path = (req.url ?? '/').split('?')[0]
    const answer = (status: number, body: Record<string, string>) => {
      res.writeHead(status, { 'Content-Type': 'application/json' }).end(JSON.stringify(body))
    }
    if (path !== '/metrics') return answer(404, { error: `No route ${path}` })
    if (req.method !== 'GET') return answer(405, { error: 'Use GET' })
    registry.metrics().then(
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
