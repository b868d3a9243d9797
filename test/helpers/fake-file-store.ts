// A fake runtime file store (protocol 2.10) on loopback: it records what it was sent and
// answers each case a test sets up.
import { createServer, type IncomingMessage, type Server } from 'node:http'
import type { AddressInfo } from 'node:net'

export type Received = { method: string; path: string; headers: IncomingMessage['headers']; body: Buffer; aborted: boolean }

export type FakeFileStore = {
  url: string
  received: Received[]
  /** Next answer to a store: 'file' (default), 'notStored', 'busy', or a delay before answering 'file'. */
  storeMode: { kind: 'file' } | { kind: 'notStored'; why: string } | { kind: 'busy' } | { kind: 'slow'; ms: number }
  close(): Promise<void>
}

export async function startFakeFileStore(token: string): Promise<FakeFileStore> {
  const files = new Map<string, { bytes: Buffer; type: string }>()
  const state: FakeFileStore = { url: '', received: [], storeMode: { kind: 'file' }, close: async () => undefined }
  const server: Server = createServer((req, res) => {
    const chunks: Buffer[] = []
    const record: Received = { method: req.method ?? '', path: req.url ?? '', headers: req.headers, body: Buffer.alloc(0), aborted: false }
    state.received.push(record)
    req.on('data', (c: Buffer) => chunks.push(c))
    res.on('close', () => {
      if (!res.writableFinished) record.aborted = true
    })
    req.on('end', () => {
      record.body = Buffer.concat(chunks)
      const json = (status: number, value: unknown) => {
        res.writeHead(status, { 'content-type': 'application/json' })
        res.end(JSON.stringify(value))
      }
      if (req.headers.authorization !== `Bearer ${token}`) return json(401, { error: { code: 'bad-token' } })
      if (req.method === 'POST' && req.url === '/files') {
        const mode = state.storeMode
        if (mode.kind === 'busy') return json(503, { error: { code: 'tool-files-busy', message: 'no room' } })
        if (mode.kind === 'notStored') return json(200, { notStored: mode.why })
        const artifactId = `art ${files.size + 1}/ü`
        files.set(artifactId, { bytes: record.body, type: String(req.headers['content-type']) })
        const answer = () =>
          json(200, {
            file: {
              artifactId,
              name: decodeURIComponent(String(req.headers['kindgi-file-name'])),
              type: req.headers['content-type'],
              size: record.body.length,
            },
          })
        if (mode.kind === 'slow') setTimeout(answer, mode.ms)
        else answer()
        return
      }
      if (req.method === 'GET' && req.url?.startsWith('/files/')) {
        const id = decodeURIComponent(req.url.slice('/files/'.length))
        if (id === 'busy') return json(503, { error: { code: 'tool-files-busy' } })
        const file = files.get(id)
        if (file === undefined) return json(200, { notRead: 'gone' })
        res.writeHead(200, { 'content-type': 'application/octet-stream' })
        res.end(file.bytes)
        return
      }
      json(404, { error: { code: 'not-found' } })
    })
  })
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve))
  state.url = `http://127.0.0.1:${(server.address() as AddressInfo).port}/files`
  state.close = () =>
    new Promise((resolve) => {
      server.closeAllConnections()
      server.close(() => resolve())
    })
  return state
}
