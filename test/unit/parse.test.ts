// Message parsing (docs/spec/CONTRACT.md §5): the order of checks and the code each failure answers.
import { describe, expect, it } from 'vitest'
import { parseRequest } from '../../src/protocol/parse.js'

function code(body: string): string | undefined {
  const parsed = parseRequest(body)
  return parsed.kind === 'error' ? parsed.error.code : undefined
}

describe('parse order', () => {
  it("JSON first, then object, then v, then kind, then the kind's own fields", () => {
    expect(code('nope')).toBe('malformed-message')
    expect(code('[]')).toBe('malformed-message')
    expect(code('{"kind":"invoke"}')).toBe('unknown-protocol-version')
    expect(code('{"v":"2","kind":"invoke"}')).toBe('unknown-protocol-version')
    expect(code('{"v":2}')).toBe('unexpected-message-kind')
    expect(code('{"v":2,"kind":"invoke"}')).toBe('malformed-message')
  })
  it('an invoke needs tool.id, a string version when present, input and ctx ids', () => {
    const ok = { v: 2, kind: 'invoke', tool: { id: 't' }, input: null, ctx: { tenantId: 'a', runId: 'b' } }
    expect(parseRequest(JSON.stringify(ok))).toMatchObject({ kind: 'ok', about: { target: 'tool', id: 't' } })
    expect(code(JSON.stringify({ ...ok, tool: { id: 't', version: null } }))).toBe('malformed-message')
    expect(code(JSON.stringify({ ...ok, ctx: { tenantId: 'a' } }))).toBe('malformed-message')
    const { input: _dropped, ...noInput } = ok
    expect(code(JSON.stringify(noInput))).toBe('malformed-message')
  })
  it('errors about a named tool or check carry its id', () => {
    const parsed = parseRequest(JSON.stringify({ v: 2, kind: 'invoke', tool: { id: 'x', version: 3 }, input: {}, ctx: {} }))
    expect(parsed).toMatchObject({ kind: 'error', error: { toolId: 'x' } })
    const check = parseRequest(JSON.stringify({ v: 2, kind: 'check-invoke', check: { id: 'c' }, config: 'no' }))
    expect(check).toMatchObject({ kind: 'error', error: { checkId: 'c', code: 'malformed-message' } })
  })
  it('__proto__ keys stay plain data', () => {
    const parsed = parseRequest('{"v":2,"kind":"invoke","tool":{"id":"t"},"input":{"__proto__":{"polluted":true}},"ctx":{"tenantId":"a","runId":"b"}}')
    expect(parsed.kind).toBe('ok')
    expect(({} as Record<string, unknown>).polluted).toBeUndefined()
  })
})

describe('bug: a v or kind nested deeper than JSON.stringify can write answered 500', () => {
  const deepArray = '['.repeat(200_000) + ']'.repeat(200_000)
  it('a deeply nested v is unknown-protocol-version, named by its type', () => {
    const parsed = parseRequest(`{"v":${deepArray}}`)
    expect(parsed).toMatchObject({
      kind: 'error',
      error: { code: 'unknown-protocol-version', message: 'Protocol version (an array) is not supported: this service speaks v2' },
    })
  })
  it('a deeply nested kind is unexpected-message-kind, named by its type', () => {
    const parsed = parseRequest(`{"v":2,"kind":${deepArray}}`)
    expect(parsed).toMatchObject({
      kind: 'error',
      error: { code: 'unexpected-message-kind', message: 'Message kind (an array) is not "invoke" or "check-invoke"' },
    })
  })
  it('a long string v is quoted cut short, so the answer does not echo megabytes back', () => {
    const parsed = parseRequest(JSON.stringify({ v: 'x'.repeat(1_000_000) }))
    expect(parsed.kind === 'error' && parsed.error.message.length).toBeLessThan(200)
  })
  it('plain values are still quoted as JSON', () => {
    expect(parseRequest('{"v":"2"}')).toMatchObject({ error: { message: 'Protocol version "2" is not supported: this service speaks v2' } })
    expect(parseRequest('{"kind":"invoke"}')).toMatchObject({ error: { message: 'Protocol version missing is not supported: this service speaks v2' } })
    expect(parseRequest('{"v":2,"kind":null}')).toMatchObject({ error: { message: 'Message kind null is not "invoke" or "check-invoke"' } })
  })
})
