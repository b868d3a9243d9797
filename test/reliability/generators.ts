// fast-check generators for wire fuzzing: mutated messages, broken headers, methods on routes,
// pipelined/keep-alive/fragmented requests, bodies that stop half-way. Each yields a WireCase
// (bytes to write, what was asked) the oracle can judge, shrinking to a small readable case.
import fc from 'fast-check'
import { TOKEN } from '../helpers/host.js'
import { deep, editAt, obj, paths, raw, render, val, type JsonText } from './json-text.js'
import { rawRequest, type Piece } from './wire.js'

export type SentRequest = {
  method: string
  target: string
  /** When the answer is known exactly: its status, and for a 200 invoke its error code. */
  expect?: { status?: number; code?: string; marker?: string }
}

export type WireCase = {
  what: string
  host: 'plain' | 'pinned'
  pieces: Piece[]
  requests: SentRequest[]
  /** The client ends or drops the connection early: no answer is owed. */
  clientQuits?: boolean
  /** Content-Length or Transfer-Encoding was edited: leftover bytes may be answered as a request of their own. */
  framingEdited?: boolean
}

export const PINNED_TENANT = 'tenant-pinned'
/** Every fuzzed invoke carries this deadline, so a mutated input can hold a slot for at most this long. */
export const FUZZ_DEADLINE_MS = 1000

const TOOLS = [
  'echo',
  'defaults',
  'counter',
  'ctx',
  'throws',
  'bad-output',
  'versioned',
  'unversioned',
  'pause',
  'pause-undeclared',
  'reject-connection',
  'declarative',
  'env',
  'isolated',
  'sleep',
]
const CHECKS = ['threshold', 'threshold-alias', 'bad-verdict', 'bare-boolean', 'check-throws', 'pii']
const NASTY_KEYS = ['__proto__', 'constructor', 'prototype', 'toString', 'hasOwnProperty', 'valueOf', '', ' ', 'v', 'kind', 'then']
export const ROUTES = ['/healthz', '/readyz', '/v1/info', '/v1/invoke']
export const METHODS = ['GET', 'HEAD', 'POST', 'PUT', 'DELETE', 'PATCH', 'OPTIONS', 'TRACE']

// ---------- values ----------

const hugeNumber = fc.constantFrom('1e400', '-1e400', '1E-400', '-0', '9007199254740993', `1${'0'.repeat(400)}`, `0.${'0'.repeat(400)}1`, '123456789e-2')
const unicode = fc.string({ unit: 'binary', maxLength: 64 })

/** A value of the wrong type, size or shape for any field. */
export const nasty: fc.Arbitrary<JsonText> = fc.oneof(
  fc.constantFrom<unknown>(null, true, false, 0, -1, 1.5, '', 'x', [], {}).map(val),
  fc.jsonValue({ maxDepth: 3 }).map(val),
  hugeNumber.map(raw),
  unicode.map(val),
  fc.constantFrom('"\\ud800"', '"\\udfff\\ud800"', '"\\u0000"', '"\u2028\u2029"', '"\ufeff"', '"\\uFFFF"').map(raw),
  fc.integer({ min: 1_000, max: 2_000_000 }).map((n) => val('x'.repeat(n))),
  fc.tuple(fc.integer({ min: 50, max: 200_000 }), fc.constantFrom('arr' as const, 'obj' as const)).map(([d, k]) => deep(d, k)),
  fc.integer({ min: 1_000, max: 100_000 }).map((n) => raw(`[${'0,'.repeat(n)}0]`)),
  fc.constantFrom(...NASTY_KEYS).chain((k) => nastyLeaf.map((v) => ({ t: 'obj', entries: [[k, v]] }) as JsonText)),
)
const nastyLeaf: fc.Arbitrary<JsonText> = fc.oneof(fc.jsonValue({ maxDepth: 2 }).map(val), hugeNumber.map(raw))

// ---------- messages ----------

const str = fc.string({ maxLength: 12 })
const ctxArb = fc.record(
  {
    tenantId: fc.oneof(fc.constant('tenant-a'), fc.constant(PINNED_TENANT), str),
    runId: str,
    requestId: str,
    idempotencyKey: fc.uuid(),
    projectId: str,
    secrets: fc.dictionary(str, str, { maxKeys: 2 }),
    settings: fc.dictionary(str, fc.jsonValue({ maxDepth: 2 }), { maxKeys: 2 }),
    waitToken: fc.record({ id: str, url: fc.constant('http://127.0.0.1:9/wait') }),
  },
  { requiredKeys: ['tenantId', 'runId'] },
)

const inputArb = fc.oneof(
  fc.record({ ms: fc.integer({ min: 0, max: 30 }) }),
  fc.record({ name: str, greeting: fc.option(str, { nil: undefined }) }, { requiredKeys: ['name'] }),
  fc.record({ timeoutMs: fc.oneof(fc.integer(), fc.double()), name: str }, { requiredKeys: [] }),
  fc.record({ connection: str }),
  fc.dictionary(str, fc.jsonValue({ maxDepth: 2 }), { maxKeys: 4 }),
)

const invokeArb: fc.Arbitrary<JsonText> = fc
  .record({
    id: fc.oneof({ weight: 5, arbitrary: fc.constantFrom(...TOOLS) }, { weight: 1, arbitrary: str }),
    version: fc.option(fc.constantFrom('1.0.0', '2.0.0', '9.9.9'), { nil: undefined }),
    input: inputArb,
    ctx: ctxArb,
  })
  .map(({ id, version, input, ctx }) =>
    obj({ v: val(2), kind: val('invoke'), tool: val(version === undefined ? { id } : { id, version }), input: val(input), ctx: val(ctx) }),
  )

const checkArb: fc.Arbitrary<JsonText> = fc
  .record({
    id: fc.oneof({ weight: 5, arbitrary: fc.constantFrom(...CHECKS) }, { weight: 1, arbitrary: str }),
    config: fc.oneof(fc.record({ min: fc.oneof(fc.integer(), fc.double()) }), fc.dictionary(str, fc.jsonValue({ maxDepth: 2 }), { maxKeys: 3 })),
    trace: fc.jsonValue({ maxDepth: 3 }),
  })
  .map(({ id, config, trace }) => obj({ v: val(2), kind: val('check-invoke'), check: val({ id }), config: val(config), trace: val(trace) }))

type Mutation = (node: JsonText) => fc.Arbitrary<JsonText>

/** Picks one place in the message and breaks it. */
const mutate: Mutation = (node) => {
  const all = paths(explode(node))
  return fc.tuple(fc.constantFrom(...all), fc.nat(3), nasty, fc.constantFrom(...NASTY_KEYS, 'extra')).map(([path, how, value, key]) => {
    const tree = explode(node)
    const out = editAt(tree, path, (old) => {
      if (how === 0) return value // wrong type, size or shape
      if (how === 1) return path.length === 0 ? old : undefined // a field removed
      if (old.t === 'obj') {
        // an added key (__proto__, constructor …) or the same key twice with another value
        const dup = old.entries[0]
        return { t: 'obj', entries: how === 2 || dup === undefined ? [...old.entries, [key, value]] : [...old.entries, [dup[0], value]] }
      }
      return value
    })
    return out ?? tree
  })
}

/** Turns the val() leaves of a message into objects and arrays, so mutations can reach inside them. */
function explode(node: JsonText): JsonText {
  if (node.t === 'obj') return { t: 'obj', entries: node.entries.map(([k, v]) => [k, explode(v)]) }
  if (node.t === 'arr') return { t: 'arr', items: node.items.map(explode) }
  if (node.text.length > 2_000 || !/^[[{]/.test(node.text)) return node
  let value: unknown
  try {
    value = JSON.parse(node.text)
  } catch {
    return node
  }
  return fromValue(value)
}

function fromValue(value: unknown): JsonText {
  if (Array.isArray(value)) return { t: 'arr', items: value.map(fromValue) }
  if (typeof value === 'object' && value !== null) return { t: 'obj', entries: Object.entries(value).map(([k, v]) => [k, fromValue(v)]) }
  return val(value)
}

/** The text of a message after 0–3 mutations, sometimes cut short or wrapped in junk. */
export const messageText: fc.Arbitrary<string> = fc
  .tuple(fc.oneof(invokeArb, checkArb), fc.nat(3))
  .chain(([base, n]) => {
    let arb: fc.Arbitrary<JsonText> = fc.constant(base)
    for (let i = 0; i < n; i++) arb = arb.chain(mutate)
    return arb
  })
  .map(render)
  .chain((text) =>
    fc.oneof(
      { weight: 8, arbitrary: fc.constant(text) },
      { weight: 1, arbitrary: fc.nat(text.length).map((cut) => text.slice(0, cut)) }, // stops half-way through the JSON
      { weight: 1, arbitrary: fc.constantFrom(`\ufeff${text}`, `${text}garbage`, text + text, `[${text}]`, ` \n\t${text}\r\n `) },
    ),
  )

/** Bodies that are not messages at all. */
export const junkText: fc.Arbitrary<string> = fc.oneof(
  fc.constantFrom('', 'null', '[]', '""', '0', 'true', '{}', '{"v":2}', '{"v":"2"}', '{"v":2,"kind":"result"}', '{"v":2,"kind":"invoke"}'),
  fc.string({ unit: 'binary', maxLength: 200 }),
  fc.json({ maxDepth: 3 }),
)

// ---------- cases ----------

function goodHeaders(host: WireCase['host'], body: string): Array<[string, string]> {
  const headers: Array<[string, string]> = [
    ['Host', '127.0.0.1'],
    ['Content-Type', 'application/json'],
    ['kindgi-pack-token', TOKEN],
    ['kindgi-timeout-ms', String(FUZZ_DEADLINE_MS)],
    ['Content-Length', String(Buffer.byteLength(body))],
  ]
  if (host === 'pinned') headers.push(['kindgi-tenant-id', PINNED_TENANT])
  return headers
}

const hostArb = fc.constantFrom<WireCase['host']>('plain', 'plain', 'pinned')

/** A well-framed POST /v1/invoke with a fuzzed message: always a 200 protocol message (or a 421 or 503). */
export const messageCase: fc.Arbitrary<WireCase> = fc
  .tuple(hostArb, fc.oneof({ weight: 4, arbitrary: messageText }, { weight: 1, arbitrary: junkText }))
  .map(([host, body]) => ({
    what: 'message',
    host,
    pieces: [rawRequest('POST', '/v1/invoke', goodHeaders(host, body), body)],
    requests: [{ method: 'POST', target: '/v1/invoke', expect: expectForText(body) }],
  }))

/** What the first parse steps of docs/spec/CONTRACT.md §5 must answer for a body, where they decide. */
export function expectForText(body: string): SentRequest['expect'] {
  let value: unknown
  try {
    value = JSON.parse(body)
  } catch {
    return { code: 'malformed-message' }
  }
  if (typeof value !== 'object' || value === null || Array.isArray(value)) return { code: 'malformed-message' }
  const v = value as Record<string, unknown>
  if (v.v !== 2) return { code: 'unknown-protocol-version' }
  if (v.kind !== 'invoke' && v.kind !== 'check-invoke') return { code: 'unexpected-message-kind' }
  return undefined
}

const headerValue = fc.oneof(
  fc.stringMatching(/^[\x21-\x7e]{0,40}$/),
  fc.constantFrom(
    '',
    ' ',
    'a\tb',
    '\u00e9t\u00e9',
    '\u2603',
    'x'.repeat(20_000),
    'v\r\n injected: 1',
    'a\u0000b',
    'a\u007fb',
    '0x10',
    '-1',
    '1e3',
    '1.0',
    ' 12 ',
  ),
)
const headerName = fc.oneof(
  fc.stringMatching(/^[A-Za-z0-9!#$%&'*+.^_`|~-]{1,20}$/),
  fc.constantFrom('bad name', 'bad:name', '', '\u00e9', 'x'.repeat(9_000), 'Content-Length', 'Transfer-Encoding', 'Host', 'Expect', 'Connection', 'Upgrade'),
)

/** Header lists gone wrong: missing, duplicated, malformed, oversized, conflicting framing. */
const headerEdits = fc.array(
  fc.oneof(
    fc.record({ op: fc.constant('drop' as const), name: fc.constantFrom('Host', 'Content-Type', 'kindgi-pack-token', 'Content-Length') }),
    fc.record({
      op: fc.constant('dup' as const),
      name: fc.constantFrom('Host', 'Content-Type', 'kindgi-pack-token', 'Content-Length', 'kindgi-timeout-ms', 'kindgi-tenant-id'),
    }),
    fc.record({
      op: fc.constant('set' as const),
      name: fc.constantFrom(
        'Content-Type',
        'kindgi-pack-token',
        'kindgi-tenant-id',
        'traceparent',
        'kindgi-request-id',
        'kindgi-run-id',
        'kindgi-protocol',
        'Host',
      ),
      value: headerValue,
    }),
    fc.record({
      op: fc.constant('set' as const),
      name: fc.constant('Content-Type'),
      value: fc.constantFrom(
        'APPLICATION/JSON',
        'application/json; charset=utf-8',
        'application/json;;;',
        'application/jsonx',
        'text/json',
        'application/json, text/plain',
        'multipart/form-data; boundary=x',
      ),
    }),
    fc.record({ op: fc.constant('set' as const), name: fc.constant('Expect'), value: fc.constantFrom('100-continue', 'nonsense', '200-ok') }),
    fc.record({
      op: fc.constant('set' as const),
      name: fc.constant('Connection'),
      value: fc.constantFrom('close', 'keep-alive', 'upgrade', 'TE, close', 'Upgrade, HTTP2-Settings'),
    }),
    fc.record({ op: fc.constant('set' as const), name: fc.constant('Upgrade'), value: fc.constantFrom('websocket', 'h2c') }),
    fc.record({
      op: fc.constant('set' as const),
      name: fc.constant('Transfer-Encoding'),
      value: fc.constantFrom('chunked', 'chunked, chunked', 'gzip, chunked', 'identity', 'chunkedx', 'gzip'),
    }),
    fc.record({
      op: fc.constant('set' as const),
      name: fc.constant('Content-Length'),
      value: fc.constantFrom('0', '-1', 'abc', '1e3', '99999999999999999999', ' 5', '5, 5', '3'),
    }),
    fc.record({ op: fc.constant('add' as const), name: headerName, value: headerValue }),
    fc.record({ op: fc.constant('many' as const), count: fc.integer({ min: 100, max: 3_000 }) }),
    fc.record({ op: fc.constant('fold' as const) }),
  ),
  { minLength: 1, maxLength: 4 },
)

type HeaderEdit = typeof headerEdits extends fc.Arbitrary<Array<infer E>> ? E : never

function applyEdits(headers: Array<[string, string]>, edits: HeaderEdit[]): Array<[string, string]> {
  let out = [...headers]
  const idx = (name: string) => out.findIndex(([k]) => k.toLowerCase() === name.toLowerCase())
  for (const edit of edits) {
    if (edit.op === 'drop') out = out.filter(([k]) => k.toLowerCase() !== edit.name.toLowerCase())
    else if (edit.op === 'dup') {
      const i = idx(edit.name)
      if (i !== -1) out.push(out[i] as [string, string])
    } else if (edit.op === 'set') {
      const i = idx(edit.name)
      if (i === -1) out.push([edit.name, edit.value])
      else out[i] = [edit.name, edit.value]
    } else if (edit.op === 'add') out.push([edit.name, edit.value])
    else if (edit.op === 'many') for (let n = 0; n < edit.count; n++) out.push([`x-h${n}`, 'v'])
    else out.push(['X-Folded', 'first'], [' continued', 'line'])
  }
  return out
}

/** A small, valid invoke whose headers are broken in one to four ways. Only quick tools: a broken deadline header falls back to 120 s. */
export const headerCase: fc.Arbitrary<WireCase> = fc
  .tuple(hostArb, headerEdits, fc.constantFrom('echo', 'throws', 'counter', 'nope'), fc.boolean())
  .map(([host, edits, tool, chunked]) => {
    const body = JSON.stringify({ v: 2, kind: 'invoke', tool: { id: tool }, input: { a: 1 }, ctx: { tenantId: PINNED_TENANT, runId: 'r' } })
    let headers = applyEdits(goodHeaders(host, body), edits)
    let payload = body
    if (chunked && !edits.some((e) => 'name' in e && (e.name === 'Content-Length' || e.name === 'Transfer-Encoding'))) {
      headers = headers.filter(([k]) => k.toLowerCase() !== 'content-length')
      headers.push(['Transfer-Encoding', 'chunked'])
      payload = `${Buffer.byteLength(body).toString(16)}\r\n${body}\r\n0\r\n\r\n`
    }
    const framingEdited = edits.some((e) => 'name' in e && (e.name === 'Content-Length' || e.name === 'Transfer-Encoding'))
    return {
      what: 'headers',
      host,
      pieces: [rawRequest('POST', '/v1/invoke', headers, payload)],
      requests: [{ method: 'POST', target: '/v1/invoke' }],
      framingEdited,
    }
  })

const oddTargets = fc.constantFrom(
  '/',
  '/v1',
  '/v1/',
  '/v1/invoke/',
  '//v1/invoke',
  '/V1/INVOKE',
  '/v1/invoke?x=1',
  '/healthz?',
  '/v1/%69nvoke',
  '/healthz/..',
  '/./healthz',
  '/%2e%2e/',
  '*',
  'http://127.0.0.1/healthz',
  'http://evil.example/v1/info',
  '/%zz',
  '/\u00fc',
  '/a b',
  '/v1\\invoke',
  `/${'a'.repeat(10_000)}`,
  '/healthz#x',
  '',
)

/** Every method on every route (and on paths that are almost routes), with or without the token. */
export const routeCase: fc.Arbitrary<WireCase> = fc
  .tuple(
    hostArb,
    fc.oneof(
      { weight: 4, arbitrary: fc.constantFrom(...METHODS) },
      { weight: 1, arbitrary: fc.constantFrom('PROPFIND', 'FOO', 'get', 'MKCOL', 'PRI', 'CONNECT', 'SEARCH') },
    ),
    fc.oneof({ weight: 4, arbitrary: fc.constantFrom(...ROUTES) }, { weight: 2, arbitrary: oddTargets }, { weight: 1, arbitrary: fc.webPath() }),
    fc.boolean(),
    fc.constantFrom('', '{}', JSON.stringify({ v: 2, kind: 'invoke', tool: { id: 'echo' }, input: {}, ctx: { tenantId: PINNED_TENANT, runId: 'r' } })),
  )
  .map(([host, method, target, withToken, body]) => {
    const headers: Array<[string, string]> = [['Host', '127.0.0.1']]
    if (withToken) headers.push(['kindgi-pack-token', TOKEN])
    if (host === 'pinned') headers.push(['kindgi-tenant-id', PINNED_TENANT])
    if (body !== '') headers.push(['Content-Type', 'application/json'], ['Content-Length', String(Buffer.byteLength(body))])
    return {
      what: 'route',
      host,
      pieces: [rawRequest(method, target, headers, body)],
      requests: [{ method, target, expect: expectForRoute(method, target, withToken, body) }],
    }
  })

/** The exact status docs/spec/CONTRACT.md §2 gives a canonical route, method and token (undefined when it is not canonical). */
export function expectForRoute(method: string, target: string, withToken: boolean, body: string): SentRequest['expect'] {
  if (!ROUTES.includes(target) || !METHODS.includes(method)) return undefined
  const get = method === 'GET' || method === 'HEAD'
  if (target === '/healthz' || target === '/readyz') return { status: get ? 200 : 405 }
  if (target === '/v1/info') return { status: !get ? 405 : withToken ? 200 : 401 }
  if (method !== 'POST') return { status: 405 }
  if (!withToken) return { status: 401 }
  return body === '' ? { status: 415 } : undefined
}

/** A short invoke of echo whose answer carries `marker`, so pipelined answers can be matched to their requests. */
function echoRequest(host: WireCase['host'], marker: string): string {
  const body = JSON.stringify({ v: 2, kind: 'invoke', tool: { id: 'echo' }, input: { marker }, ctx: { tenantId: PINNED_TENANT, runId: 'r' } })
  return rawRequest('POST', '/v1/invoke', goodHeaders(host, body), body)
}

/** 2–8 requests on one connection: written in one go (pipelined) or one after another (keep-alive). */
export const pipelineCase: fc.Arbitrary<WireCase> = fc
  .tuple(
    hostArb,
    fc.array(fc.oneof(fc.constant('echo'), fc.constantFrom('/healthz', '/readyz', '/v1/info', '/nope')), { minLength: 2, maxLength: 8 }),
    fc.oneof(fc.constant(0), fc.integer({ min: 1, max: 40 })),
  )
  .map(([host, kinds, pauseMs]) => {
    const pieces: Piece[] = []
    const requests: SentRequest[] = []
    kinds.forEach((kind, i) => {
      if (kind === 'echo') {
        pieces.push(echoRequest(host, `m${i}`))
        requests.push({ method: 'POST', target: '/v1/invoke', expect: { status: 200, marker: `m${i}` } })
      } else {
        const headers: Array<[string, string]> = [
          ['Host', '127.0.0.1'],
          ['kindgi-pack-token', TOKEN],
        ]
        if (host === 'pinned') headers.push(['kindgi-tenant-id', PINNED_TENANT])
        pieces.push(rawRequest('GET', kind, headers))
        requests.push({ method: 'GET', target: kind, expect: { status: kind === '/nope' ? 404 : 200 } })
      }
      if (pauseMs > 0) pieces.push({ pauseMs })
    })
    return { what: pauseMs === 0 ? 'pipelined' : 'keep-alive', host, pieces, requests }
  })

/** An invoke whose body stops half-way: the client half-closes, drops the connection, or stalls then drops it. */
export const halfBodyCase: fc.Arbitrary<WireCase> = fc
  .tuple(hostArb, fc.integer({ min: 1, max: 5_000 }), fc.double({ min: 0, max: 0.99, noNaN: true }), fc.constantFrom('end', 'destroy', 'stall'))
  .map(([host, size, fraction, how]) => {
    const body = JSON.stringify({ v: 2, kind: 'invoke', tool: { id: 'echo' }, input: { pad: 'p'.repeat(size) }, ctx: { tenantId: PINNED_TENANT, runId: 'r' } })
    const cut = Math.floor(Buffer.byteLength(body) * fraction)
    const head = rawRequest('POST', '/v1/invoke', goodHeaders(host, body))
    const sent = Buffer.from(body).subarray(0, cut).toString('latin1')
    const pieces: Piece[] = [head, Buffer.from(sent, 'latin1')]
    if (how === 'end') pieces.push({ end: true })
    else if (how === 'stall') pieces.push({ pauseMs: 200 }, { destroy: true })
    else pieces.push({ destroy: true })
    return { what: `half-body-${how}`, host, pieces, requests: [{ method: 'POST', target: '/v1/invoke' }], clientQuits: true }
  })

/** A valid request cut into fragments written with tiny pauses, so the parser sees every split point. */
export const fragmentedCase: fc.Arbitrary<WireCase> = fc.tuple(hostArb, fc.array(fc.nat(), { minLength: 1, maxLength: 6 })).map(([host, cuts]) => {
  const whole = echoRequest(host, 'frag')
  const points = [...new Set(cuts.map((c) => c % whole.length))].sort((a, b) => a - b)
  const pieces: Piece[] = []
  let at = 0
  for (const p of points) {
    if (p > at) pieces.push(whole.slice(at, p), { pauseMs: 2 })
    at = p
  }
  pieces.push(whole.slice(at))
  return { what: 'fragmented', host, pieces, requests: [{ method: 'POST', target: '/v1/invoke', expect: { status: 200, marker: 'frag' } }] }
})

export const anyCase: fc.Arbitrary<WireCase> = fc.oneof(
  { weight: 6, arbitrary: messageCase },
  { weight: 3, arbitrary: headerCase },
  { weight: 3, arbitrary: routeCase },
  { weight: 2, arbitrary: pipelineCase },
  { weight: 1, arbitrary: halfBodyCase },
  { weight: 1, arbitrary: fragmentedCase },
)
