// docs/spec/CONTRACT.md §2: routes, the order of checks, transport statuses and answer headers.
import { createHash } from 'node:crypto'
import { readFileSync } from 'node:fs'
import { request as httpRequest } from 'node:http'
import { describe, expect, it } from 'vitest'
import { BASIC_INDEX, invoke, post, request, sharedHost, TOKEN } from '../helpers/host.js'
import { invokeHead, rawExchange } from '../helpers/raw-exchange.js'

const host = sharedHost()

describe('probes', () => {
  it('/healthz answers 200 {"status":"ok"} without a token', async () => {
    const res = await request(host, '/healthz', { token: null })
    expect(res.status).toBe(200)
    expect(res.body).toEqual({ status: 'ok' })
  })
  it('/readyz answers 200 {"status":"ready"} once every module has loaded', async () => {
    const res = await request(host, '/readyz', { token: null })
    expect(res.status).toBe(200)
    expect(res.body).toEqual({ status: 'ready' })
  })
})

describe('the order of checks: route, method, token', () => {
  it('an unknown path answers 404 naming it, before method or token', async () => {
    const res = await request(host, '/v1/nothing', { method: 'DELETE', token: null })
    expect(res.status).toBe(404)
    expect(res.body).toEqual({ error: 'No route /v1/nothing' })
  })
  it('a wrong method answers 405 before the token is looked at', async () => {
    expect(await request(host, '/v1/invoke', { method: 'GET', token: null })).toMatchObject({ status: 405, body: { error: 'Use POST' } })
    expect(await request(host, '/v1/info', { method: 'POST', token: null })).toMatchObject({ status: 405, body: { error: 'Use GET' } })
    expect(await request(host, '/healthz', { method: 'PUT', token: null })).toMatchObject({ status: 405, body: { error: 'Use GET' } })
    expect(await request(host, '/readyz', { method: 'DELETE', token: null })).toMatchObject({ status: 405, body: { error: 'Use GET' } })
  })
  it('a missing or wrong token answers 401 on /v1/info and /v1/invoke', async () => {
    expect(await request(host, '/v1/info', { token: null })).toMatchObject({ status: 401, body: { error: 'Bad pack token' } })
    expect(await request(host, '/v1/info', { token: 'nope' })).toMatchObject({ status: 401, body: { error: 'Bad pack token' } })
    const res = await request(host, '/v1/invoke', { method: 'POST', token: 'x', headers: { 'content-type': 'application/json' }, body: '{}' })
    expect(res).toMatchObject({ status: 401, body: { error: 'Bad pack token' } })
  })
  it('the token is never read from Authorization', async () => {
    const res = await request(host, '/v1/info', { token: null, headers: { authorization: 'Bearer test-token-0123456789' } })
    expect(res.status).toBe(401)
  })
})

describe('/v1/info', () => {
  it('describes the pack with the SHA-256 of the index file and every indexed tool version', async () => {
    const res = await request(host, '/v1/info')
    expect(res.status).toBe(200)
    const hash = `sha256:${createHash('sha256').update(readFileSync(BASIC_INDEX)).digest('hex')}`
    expect(res.body).toMatchObject({ protocol: 2, packId: 'fixture', packVersion: '1.2.3', artifactVersion: '20261130.7', indexHash: hash, missingEnv: [] })
    expect(res.body.tools).toContainEqual({ id: 'versioned', version: '1.0.0' })
    expect(res.body.tools).toContainEqual({ id: 'versioned', version: '2.0.0' })
    expect(res.body.tools).toContainEqual({ id: 'unversioned' })
  })
  it('lists pack checks by check id, once, and never a built-in check', async () => {
    const res = await request(host, '/v1/info')
    expect([...res.body.checks].sort()).toEqual(['bad-verdict', 'bare-boolean', 'check-throws', 'threshold'])
  })
})

describe('/v1/invoke transport statuses', () => {
  it('a body that is not application/json answers 415', async () => {
    const res = await request(host, '/v1/invoke', { method: 'POST', headers: { 'content-type': 'text/plain' }, body: '{}' })
    expect(res).toMatchObject({ status: 415, body: { error: 'Content-Type must be application/json' } })
  })
  it('application/json with a charset parameter is accepted', async () => {
    const res = await post(
      host,
      { v: 2, kind: 'invoke', tool: { id: 'echo' }, input: { a: 1 }, ctx: { tenantId: 't', runId: 'r' } },
      { 'content-type': 'application/json; charset=utf-8' },
    )
    expect(res.status).toBe(200)
    expect(res.body).toEqual({ v: 2, kind: 'result', output: { a: 1 } })
  })
  it('a Content-Length over 10 MiB is refused with 413 before the body is read', async () => {
    const status = await new Promise<{ status: number; body: string }>((resolve, reject) => {
      const req = httpRequest(`${host.url}/v1/invoke`, {
        method: 'POST',
        headers: { 'content-type': 'application/json', 'content-length': String(64 * 1024 * 1024), 'kindgi-pack-token': 'test-token-0123456789' },
      })
      req.on('response', (res) => {
        let body = ''
        res.on('data', (d) => (body += d))
        res.on('end', () => resolve({ status: res.statusCode ?? 0, body }))
      })
      req.on('error', reject)
      req.write('{"v":2') // a few bytes only: the answer must come without the rest
    })
    expect(status.status).toBe(413)
    expect(JSON.parse(status.body)).toEqual({ error: 'Request body too large' })
  })
  it('a chunked body is refused with 413 the moment it passes 10 MiB, without sending the rest', async () => {
    const result = await new Promise<{ status: number; sent: number }>((resolve, reject) => {
      let sent = 0
      const req = httpRequest(`${host.url}/v1/invoke`, {
        method: 'POST',
        headers: { 'content-type': 'application/json', 'transfer-encoding': 'chunked', 'kindgi-pack-token': 'test-token-0123456789' },
      })
      const chunk = Buffer.alloc(256 * 1024, 0x20)
      let answered = false
      req.on('response', (res) => {
        answered = true
        res.resume()
        resolve({ status: res.statusCode ?? 0, sent })
        req.destroy()
      })
      req.on('error', (err) => (answered ? undefined : reject(err)))
      // A chunk a turn of the event loop, so the 413 is seen as it comes: how much was sent by then
      // says when the server refused.
      const pump = () => {
        if (answered || sent >= 64 * 1024 * 1024) return
        sent += chunk.length
        req.write(chunk, () => setImmediate(pump))
      }
      pump()
    })
    expect(result.status).toBe(413)
    // It answered long before the 64 MiB the client was ready to send.
    expect(result.sent).toBeLessThan(32 * 1024 * 1024)
  })
  it('a 200 answer carries kindgi-duration-ms and kindgi-artifact-version', async () => {
    const res = await invoke(host, 'echo', { x: 1 })
    expect(res.status).toBe(200)
    expect(res.headers.get('kindgi-artifact-version')).toBe('20261130.7')
    expect(res.headers.get('kindgi-duration-ms')).toMatch(/^\d+$/)
    expect(res.headers.get('content-type')).toMatch(/^application\/json/)
  })
})

describe('a body refused as too large', () => {
  const headFor = (length: number) => invokeHead(length, TOKEN)
  it('a client that writes all of it before reading reads the whole 413, not a reset', async () => {
    const big = Buffer.alloc(24 * 1024 * 1024, 0x20)
    for (let i = 0; i < 2; i++) {
      const got = await rawExchange(host.port, headFor(big.length), big, /Request body too large"\}$/)
      expect(got.error).toBeUndefined()
      expect(got.text).toMatch(/^HTTP\/1\.1 413 /)
    }
  })
  it('a client that takes a second to send it still reads the 413', async () => {
    // 16 MiB in 256 KiB pieces every 16 ms: the connection was cut after half a second.
    const got = await rawExchange(host.port, headFor(16 * 1024 * 1024), { bytes: 16 * 1024 * 1024, piece: 256 * 1024, everyMs: 16 }, /too large"\}$/)
    expect(got.error).toBeUndefined()
    expect(got.text).toMatch(/^HTTP\/1\.1 413 /)
  })
  it('a client that asked to close (Connection: close, or HTTP/1.0) reads the 413, then its connection is closed', async () => {
    for (const head of [
      headFor(16 * 1024 * 1024).replace('\r\n\r\n', '\r\nconnection: close\r\n\r\n'),
      headFor(16 * 1024 * 1024).replace('HTTP/1.1', 'HTTP/1.0'),
    ]) {
      const got = await rawExchange(host.port, head, { bytes: 16 * 1024 * 1024, piece: 1024 * 1024, everyMs: 5 })
      expect(got.error).toBeUndefined()
      expect(got.text).toMatch(/^HTTP\/1\.1 413 [\s\S]*\{"error":"Request body too large"\}$/)
      expect(got.closed).toBe(true)
    }
  })
  it('the connection serves the next request once the refused body has been sent', async () => {
    const big = Buffer.alloc(11 * 1024 * 1024, 0x20)
    const next = JSON.stringify({ v: 2, kind: 'invoke', tool: { id: 'echo' }, input: { after: 413 }, ctx: { tenantId: 't', runId: 'r' } })
    const nextRequest = `${headFor(Buffer.byteLength(next))}${next}`
    const got = await rawExchange(host.port, headFor(big.length), Buffer.concat([big, Buffer.from(nextRequest)]), /"after":413\}\}$/)
    expect(got.error).toBeUndefined()
    expect(got.text).toMatch(/^HTTP\/1\.1 413 [\s\S]*HTTP\/1\.1 200 [\s\S]*"output":\{"after":413\}\}$/)
  })
})
