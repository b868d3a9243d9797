// How register reads each answer of POST /v1/tools, and how it sends: four at a time, the
// same key on every retry, bounded retries, and no new request after a failure.
import { describe, expect, it, vi } from 'vitest'
import { MAX_RETRY_WAIT_MS, retryWaitMs, runtimeError, verdict } from '../../src/cli/register-answer.js'
import { sendAll, type Outcome, type Prepared, type SendOptions } from '../../src/cli/register-send.js'
import type { ToolManifest } from '../../src/cli/tool-manifest.js'

const error = (code: string) => ({ code, message: code })

describe('what an answer means', () => {
  it.each([
    [200, undefined, 'registered'],
    [409, error('tool-already-registered'), 'already-registered'],
    [409, error('idempotency-key-in-flight'), 'retry'],
    [429, error('rate-limit-exceeded'), 'retry'],
    [503, error('idempotency-store-unavailable'), 'retry'],
    [409, error('tool-project-mismatch'), 'failed'],
    [409, error('idempotency-key-replay-withheld'), 'failed'],
    [400, error('validation-failed'), 'failed'],
    [413, error('request-too-large'), 'failed'],
    [500, error('internal'), 'failed'],
  ] as const)('%i %s → %s', (status, e, kind) => {
    expect(verdict(status, e, null).kind).toBe(kind)
  })
  it('only 401, 403 and 404 stop everything; other failures stop new requests', () => {
    for (const status of [401, 403, 404]) expect(verdict(status, error('x'), null)).toEqual({ kind: 'failed', stopAll: true })
    for (const status of [400, 409, 413, 500]) expect(verdict(status, error('x'), null)).toEqual({ kind: 'failed', stopAll: false })
  })
  it('Retry-After is whole seconds or an HTTP date, defaults to 1 s and is capped', () => {
    expect(retryWaitMs('3')).toBe(3_000)
    expect(retryWaitMs('0')).toBe(0)
    expect(retryWaitMs(null)).toBe(1_000)
    expect(retryWaitMs('soon')).toBe(1_000)
    expect(retryWaitMs('86400')).toBe(MAX_RETRY_WAIT_MS)
    expect(retryWaitMs(new Date(10_000).toUTCString(), 8_000)).toBe(2_000)
  })
  it("reads the runtime's error object, or keeps the start of a body that is not one", () => {
    expect(runtimeError(JSON.stringify({ error: { code: 'c', message: 'm', details: { a: 1 }, requestId: 'r' } }))).toEqual({
      code: 'c',
      message: 'm',
      details: { a: 1 },
      requestId: 'r',
    })
    expect(runtimeError('<html>Bad gateway</html>')).toEqual({ message: '<html>Bad gateway</html>' })
  })
})

type Reply = { status: number; code?: string; retryAfter?: string }
type Sent = { id: string; key: string; authorization: string }

function prepared(id: string): Prepared {
  return { manifest: { id, projectId: 'p', description: 'd', input: {}, output: {} } as ToolManifest, key: `key-${id}`, label: id }
}

/** A fetch that answers from `reply` and records what was sent; `gate` may hold an answer back. */
function fakeFetch(reply: (id: string, attempt: number) => Reply, gate: (id: string) => Promise<void> = async () => undefined) {
  const sent: Sent[] = []
  let open = 0
  let most = 0
  const fetch = (async (_url: string, init: RequestInit) => {
    const body = JSON.parse(String(init.body)) as { id: string }
    const headers = init.headers as Record<string, string>
    sent.push({ id: body.id, key: headers['idempotency-key'] as string, authorization: headers.authorization as string })
    open++
    most = Math.max(most, open)
    await gate(body.id)
    open--
    const r = reply(body.id, sent.filter((s) => s.id === body.id).length)
    const text = r.code === undefined ? JSON.stringify({ toolId: body.id }) : JSON.stringify({ error: { code: r.code, message: `${r.code} happened` } })
    return new Response(text, { status: r.status, headers: r.retryAfter === undefined ? {} : { 'retry-after': r.retryAfter } })
  }) as typeof globalThis.fetch
  return { fetch, sent, most: () => most }
}

function options(fetch: typeof globalThis.fetch, extra: Partial<SendOptions> = {}): SendOptions & { waits: number[] } {
  const waits: number[] = []
  return {
    url: 'http://runtime/v1/tools',
    token: 'tok',
    fetch,
    sleep: async (ms) => {
      waits.push(ms)
    },
    concurrency: 4,
    maxAttempts: 5,
    requestTimeoutMs: 5_000,
    onRetry: () => undefined,
    onOutcome: () => undefined,
    waits,
    ...extra,
  }
}

const ids = ['a', 'b', 'c', 'd', 'e', 'f']

describe('sending', () => {
  it('runs at most four requests at once and answers every manifest in order', async () => {
    let release: () => void = () => undefined
    const held = new Promise<void>((r) => (release = r))
    const fake = fakeFetch(
      () => ({ status: 200 }),
      () => held,
    )
    const pending = sendAll(ids.map(prepared), options(fake.fetch))
    await vi.waitFor(() => expect(fake.sent).toHaveLength(4), { timeout: 5_000 })
    await new Promise((r) => setImmediate(r))
    expect(fake.sent).toHaveLength(4)
    release()
    const outcomes = await pending
    expect(fake.most()).toBe(4)
    expect(outcomes.map((o) => o.kind)).toEqual(ids.map(() => 'registered'))
    expect(fake.sent.map((s) => s.authorization)).toEqual(ids.map(() => 'Bearer tok'))
  })
  it('retries with the same key after each Retry-After, up to the bound, then fails', async () => {
    const fake = fakeFetch((id, attempt) =>
      id === 'a' && attempt < 3 ? { status: 503, code: 'idempotency-store-unavailable', retryAfter: String(attempt) } : { status: 200 },
    )
    const opts = options(fake.fetch)
    const [a] = await sendAll([prepared('a')], opts)
    expect(a).toEqual({ kind: 'registered', status: 200, attempts: 3 })
    expect(fake.sent.map((s) => s.key)).toEqual(['key-a', 'key-a', 'key-a'])
    expect(opts.waits).toEqual([1_000, 2_000])

    const always = fakeFetch(() => ({ status: 429, code: 'rate-limit-exceeded', retryAfter: '0' }))
    const [gaveUp] = await sendAll([prepared('a')], options(always.fetch))
    expect(always.sent).toHaveLength(5)
    expect(gaveUp).toMatchObject({
      kind: 'failed',
      status: 429,
      attempts: 5,
      error: { code: 'rate-limit-exceeded', message: expect.stringMatching(/^gave up after 5 attempts/) },
    })
  })
  it('after a failure, starts no new request; the ones in flight finish', async () => {
    const failed = { promise: Promise.resolve(), release: (): void => undefined }
    failed.promise = new Promise<void>((r) => (failed.release = r))
    // b, c and d answer only once a has failed and been counted.
    const fake = fakeFetch(
      (id) => (id === 'a' ? { status: 400, code: 'validation-failed' } : { status: 200 }),
      (id) => (id === 'a' ? Promise.resolve() : failed.promise),
    )
    const outcomes = await sendAll(ids.map(prepared), options(fake.fetch, { onOutcome: (p) => p.label === 'a' && failed.release() }))
    expect(outcomes.map((o) => o.kind)).toEqual(['failed', 'registered', 'registered', 'registered', 'skipped', 'skipped'])
    expect(fake.sent.map((s) => s.id)).toEqual(['a', 'b', 'c', 'd'])
  })
  it('a 401 also ends the retries that are waiting', async () => {
    let retried = false
    const fake = fakeFetch((id) =>
      id === 'a' ? { status: 503, code: 'idempotency-store-unavailable', retryAfter: '30' } : { status: 401, code: 'unauthorized' },
    )
    const outcomes = await sendAll(
      ['a', 'b'].map(prepared),
      options(fake.fetch, {
        // A wait that lasts until the run is stopped: only the abort can end it.
        sleep: (_ms, signal) => new Promise<void>((resolve) => (signal.aborted ? resolve() : signal.addEventListener('abort', () => resolve()))),
        onRetry: () => {
          retried = true
        },
      }),
    )
    expect(retried).toBe(true)
    expect(outcomes.map((o: Outcome) => o.kind)).toEqual(['skipped', 'failed'])
    expect(fake.sent.filter((s) => s.id === 'a')).toHaveLength(1)
  })
  it('a request without an answer is a failure that is not retried: it may have run', async () => {
    const fetch = (async () => {
      throw Object.assign(new TypeError('fetch failed'), { cause: new Error('connect ECONNREFUSED 127.0.0.1:9') })
    }) as typeof globalThis.fetch
    const [outcome] = await sendAll([prepared('a')], options(fetch))
    expect(outcome).toMatchObject({ kind: 'failed', attempts: 1, error: { message: expect.stringContaining('fetch failed: connect ECONNREFUSED') } })
  })
})
