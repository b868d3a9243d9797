// The front's file requests on a handler's behalf (src/pool/tool-files.ts): bounded per call and
// for the whole host, each request holding its place until its reply has left the front, and a
// file past 10 MiB refused before its bytes are held (stop 29, two red-team passes).
import { createServer } from 'node:http'
import { gzipSync } from 'node:zlib'
import type { AddressInfo } from 'node:net'
import { describe, expect, it, onTestFinished } from 'vitest'
import { createToolFiles, MAX_FILE_BYTES_IN_FLIGHT, MAX_FILE_REQUESTS_PER_CALL } from '../../src/pool/tool-files.js'
import type { FileReply } from '../../src/protocol/worker-messages.js'
import { within } from '../helpers/host.js'

/** A store that answers every request `after` ms later; a read gets `readBytes` bytes, with their length said or not, or gzipped. */
async function store(options: {
  after: number
  readBytes?: number
  sayLength?: boolean
  gzip?: boolean
  readJsonChars?: number
}): Promise<{ url: string; seen: () => number }> {
  let seen = 0
  const server = createServer((req, res) => {
    seen++
    req.resume()
    req.on('end', () =>
      setTimeout(() => {
        if (req.method === 'GET') {
          if (options.readJsonChars !== undefined) {
            res.writeHead(200, { 'content-type': 'application/json' })
            res.end(JSON.stringify({ notRead: 'x'.repeat(options.readJsonChars) }))
            return
          }
          const bytes = Buffer.alloc(options.readBytes ?? 1)
          if (options.gzip === true) {
            const zipped = gzipSync(bytes)
            res.writeHead(200, { 'content-type': 'application/octet-stream', 'content-encoding': 'gzip', 'content-length': zipped.byteLength })
            res.end(zipped)
            return
          }
          res.writeHead(200, {
            'content-type': 'application/octet-stream',
            ...(options.sayLength === false ? { 'transfer-encoding': 'chunked' } : { 'content-length': bytes.byteLength }),
          })
          if (options.sayLength === false) {
            res.write(bytes)
            res.end()
          } else res.end(bytes)
          return
        }
        res.writeHead(200, { 'content-type': 'application/json' })
        res.end(JSON.stringify({ file: { artifactId: 'a' } }))
      }, options.after),
    )
  })
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve))
  onTestFinished(() => {
    server.closeAllConnections()
    server.close()
  })
  return { url: `http://127.0.0.1:${(server.address() as AddressInfo).port}/files`, seen: () => seen }
}

/** Sends requests for call 1 and collects their replies; a reply leaves the front when the test says. */
function call(url: string) {
  const files = createToolFiles()
  const ended = new AbortController()
  files.grant(1, { url, token: 't' }, ended.signal)
  const replies: FileReply[] = []
  const leave: Array<() => void> = []
  const ask = (request: Parameters<typeof files.handle>[1]) =>
    files.handle(1, request, (reply) => {
      replies.push(reply)
      return new Promise<void>((left) => leave.push(left))
    })
  onTestFinished(() => ended.abort())
  return { ask, replies, leave }
}

const tick = (ms = 20) => new Promise((resolve) => setTimeout(resolve, ms))

describe('a call has at most four file requests in flight, each until its reply has left the front', () => {
  it('a fifth answers busy at once, having sent nothing; once a reply has left, the next request is made', async () => {
    const { url, seen } = await store({ after: 10 })
    const { ask, replies, leave } = call(url)
    for (let i = 0; i < MAX_FILE_REQUESTS_PER_CALL + 1; i++) ask({ op: 'read', artifactId: `a${i}` })
    // Four made and answered by the store; then a moment for a fifth that must not come.
    const fromTheStore = () => replies.filter((r) => r.kind === 'ok' && !('busy' in r.value)).length
    expect(await within(5_000, () => seen() >= MAX_FILE_REQUESTS_PER_CALL && fromTheStore() >= MAX_FILE_REQUESTS_PER_CALL), 'four answered').toBe(true)
    await tick(100)
    expect(seen()).toBe(MAX_FILE_REQUESTS_PER_CALL)
    expect(replies.filter((r) => r.kind === 'ok' && 'busy' in r.value)).toHaveLength(1)
    // Their replies came from the store, but none has left the front: still no room.
    ask({ op: 'read', artifactId: 'again' })
    await tick()
    expect(seen()).toBe(MAX_FILE_REQUESTS_PER_CALL)
    // Busy answers were sent at once; the first answer from the store leaves now.
    const fromStore = replies.findIndex((r) => r.kind === 'ok' && !('busy' in r.value))
    leave[fromStore]?.()
    await tick()
    ask({ op: 'read', artifactId: 'after-one-left' })
    expect(await within(5_000, () => seen() >= MAX_FILE_REQUESTS_PER_CALL + 1), 'the next request made').toBe(true)
    await tick(100)
    expect(seen()).toBe(MAX_FILE_REQUESTS_PER_CALL + 1)
  })
})

describe('a file past 10 MiB is refused before its bytes are held', () => {
  it('a store of 10 MiB and one byte answers an error and reaches no store', async () => {
    const { url, seen } = await store({ after: 0 })
    const { ask, replies } = call(url)
    ask({ op: 'store', bytes: new ArrayBuffer(10 * 1024 * 1024 + 1), name: 'f', contentType: 'application/octet-stream' })
    await tick()
    expect(seen()).toBe(0)
    expect(replies[0]).toMatchObject({ kind: 'error', message: expect.stringContaining('stores at most 10485760') })
  })

  it('a read whose length says 10 MiB and one byte answers an error, and so does one that says no length', async () => {
    for (const sayLength of [true, false]) {
      const { url } = await store({ after: 0, readBytes: 10 * 1024 * 1024 + 1, sayLength })
      const { ask, replies } = call(url)
      ask({ op: 'read', artifactId: 'big' })
      await within(5_000, () => replies.length > 0)
      expect(replies[0], `length said: ${sayLength}`).toMatchObject({ kind: 'error', message: expect.stringContaining('reads at most 10485760') })
    }
  })
})

/** One read for each of `calls` calls at once, none of whose replies leaves the front: the replies, once all have come. */
async function readsHeld(url: string, calls: number): Promise<FileReply[]> {
  const files = createToolFiles()
  const ended = new AbortController()
  onTestFinished(() => ended.abort())
  const replies: FileReply[] = []
  for (let id = 1; id <= calls; id++) {
    files.grant(id, { url, token: 't' }, ended.signal)
    files.handle(id, { op: 'read', artifactId: `a${id}` }, (reply) => {
      replies.push(reply)
      return new Promise<void>(() => {})
    })
  }
  for (let i = 0; i < 250 && replies.length < calls; i++) await tick()
  return replies
}

const busy = (replies: FileReply[]) => replies.filter((r) => r.kind === 'ok' && 'busy' in r.value).length
const MiB = 1024 * 1024

describe("an answer of the runtime's that is no file is read to 1 MiB at most", () => {
  it('a read answered with 2 MiB of JSON answers an error saying so', async () => {
    const { url } = await store({ after: 0, readJsonChars: 2 * 1024 * 1024 })
    const { ask, replies } = call(url)
    ask({ op: 'read', artifactId: 'json' })
    await within(5_000, () => replies.length > 0)
    expect(replies[0]).toMatchObject({ kind: 'error', message: 'The runtime answered a read with more than 1048576 bytes' })
  })
})

describe('the host holds at most 128 MiB of files in flight, counting what each read says it holds', () => {
  it('thirty calls reading a small file at once each get its bytes: a read waiting for the store holds no room', async () => {
    // Before, each read held room for the largest file (10 MiB) from its start: the thirteenth answered busy.
    const { url } = await store({ after: 50, readBytes: 1024 })
    const replies = await readsHeld(url, 30)
    expect(replies).toHaveLength(30)
    expect(busy(replies)).toBe(0)
    for (const reply of replies) expect(reply).toMatchObject({ kind: 'ok', value: { bytes: expect.any(ArrayBuffer) } })
  })

  // A read of no said length holds 10 MiB until its body has come, then 9: one whose answer
  // comes after others' bodies may fit in what they gave back. So between 12 and 14 of twenty
  // reads of 9 MiB get their bytes, and never more than 128 MiB is held.
  it('twenty calls reading 9 MiB sent gzipped (a length said of 9 KiB): they hold no more than 128 MiB, each room for 10 MiB until its body has come', async () => {
    // Room for the 9 KiB said let all twenty through, 180 MiB held (a review of stop 30's first version).
    const { url } = await store({ after: 20, readBytes: 9 * MiB, gzip: true })
    const replies = await readsHeld(url, 20)
    expect(replies).toHaveLength(20)
    const got = 20 - busy(replies)
    expect(got * 9 * MiB, 'bytes held').toBeLessThanOrEqual(MAX_FILE_BYTES_IN_FLIGHT)
    expect(got).toBeGreaterThanOrEqual(Math.floor(MAX_FILE_BYTES_IN_FLIGHT / (10 * MiB)))
    for (const reply of replies.filter((r) => !(r.kind === 'ok' && 'busy' in r.value)))
      expect(reply).toMatchObject({ kind: 'ok', value: { bytes: expect.any(ArrayBuffer) } })
  })

  it('twenty calls reading 9 MiB at once: those past 128 MiB answer busy, a read of no said length holding room for 10 MiB until its body has come', async () => {
    for (const sayLength of [true, false]) {
      const { url } = await store({ after: 20, readBytes: 9 * MiB, sayLength })
      const replies = await readsHeld(url, 20)
      expect(replies, `length said: ${sayLength}`).toHaveLength(20)
      const got = 20 - busy(replies)
      expect(got * 9 * MiB, `bytes held, length said: ${sayLength}`).toBeLessThanOrEqual(MAX_FILE_BYTES_IN_FLIGHT)
      // With its length said each holds 9 MiB from its answer on: exactly as many as fit.
      if (sayLength) expect(got).toBe(Math.floor(MAX_FILE_BYTES_IN_FLIGHT / (9 * MiB)))
      else expect(got).toBeGreaterThanOrEqual(Math.floor(MAX_FILE_BYTES_IN_FLIGHT / (10 * MiB)))
    }
  })
})
