// A stand-in for a Kindgi runtime's POST /v1/tools on loopback: it records every request
// (headers and body) and answers from a script the test writes, one answer per request.
import { createServer, type IncomingHttpHeaders, type Server } from 'node:http'
import type { AddressInfo } from 'node:net'

export type Answer = { status: number; body?: unknown; headers?: Record<string, string> }

export type Received = { method: string; url: string; headers: IncomingHttpHeaders; body: any; at: number }

/** Decides the answer to a request: `attempt` counts the requests for that tool id, from 1. */
export type Script = (request: Received, attempt: number) => Answer | Promise<Answer>

export type FakeRuntime = {
  url: string
  received: Received[]
  /** Requests for one tool id, in order. */
  forTool(id: string): Received[]
  close(): Promise<void>
}

export function runtimeError(status: number, code: string, message: string, extra: { details?: unknown; headers?: Record<string, string> } = {}): Answer {
  const error = { code, message, ...(extra.details === undefined ? {} : { details: extra.details }), requestId: `req-${code}` }
  return { status, body: { error }, ...(extra.headers ? { headers: extra.headers } : {}) }
}

export const registered = (request: Received): Answer => ({ status: 200, body: { toolId: request.body.id } })

export async function startFakeRuntime(script: Script): Promise<FakeRuntime> {
  const received: Received[] = []
  const attempts = new Map<string, number>()
  const server: Server = createServer((req, res) => {
    let text = ''
    req.on('data', (d: Buffer) => (text += d.toString()))
    req.on('end', async () => {
      let body: any = text
      try {
        body = JSON.parse(text)
      } catch {
        // keep the text: the assertion shows it
      }
      const request: Received = { method: req.method ?? '', url: req.url ?? '', headers: req.headers, body, at: received.length }
      received.push(request)
      const id = String(body?.id)
      const attempt = (attempts.get(id) ?? 0) + 1
      attempts.set(id, attempt)
      const answer = await script(request, attempt)
      res.writeHead(answer.status, { 'content-type': 'application/json', ...answer.headers })
      res.end(answer.body === undefined ? '' : JSON.stringify(answer.body))
    })
  })
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve))
  const port = (server.address() as AddressInfo).port
  return {
    url: `http://127.0.0.1:${port}`,
    received,
    forTool: (id) => received.filter((r) => r.body?.id === id),
    close: () =>
      new Promise((resolve) => {
        server.closeAllConnections()
        server.close(() => resolve())
      }),
  }
}
