// The Prometheus scrape endpoint, on its own port so the protocol port keeps exactly the
// routes docs/spec/CONTRACT.md §2 defines. GET /metrics only; no token (bind it where only scrapers reach).
import { createServer, type Server } from 'node:http'
import type { Registry } from 'prom-client'

export function startMetricsServer(registry: Registry, host: string | undefined, port: number): Promise<Server> {
  const server = createServer((req, res) => {
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
  return new Promise((resolve, reject) => {
    server.once('error', reject)
    server.listen(port, host, () => {
      server.off('error', reject)
      resolve(server)
    })
  })
}
