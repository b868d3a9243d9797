// docs/spec/CONTRACT.md §5: parsing order and codes, version resolution, validation with defaults,
// check configs and verdicts, throws with cause, ids on every error.
import { describe, expect, it } from 'vitest'
import { CTX, checkInvoke, invoke, post, sharedHost } from '../helpers/host.js'

const host = sharedHost()

function error(code: string, extra: Record<string, unknown> = {}) {
  return expect.objectContaining({ v: 2, kind: 'error', code, ...extra })
}

describe('parsing, in order, each failure a 200 error message', () => {
  it('a body that is not JSON is malformed-message "Request body is not valid JSON"', async () => {
    const res = await post(host, '{"v":2,')
    expect(res.status).toBe(200)
    expect(res.body).toEqual({ v: 2, kind: 'error', code: 'malformed-message', message: 'Request body is not valid JSON' })
  })
  it('JSON that is not an object is malformed-message', async () => {
    for (const body of ['[1,2]', '"text"', 'null', '42']) {
      expect((await post(host, body)).body).toEqual(error('malformed-message'))
    }
  })
  it('v other than 2 is unknown-protocol-version, checked before kind', async () => {
    expect((await post(host, { v: 1, kind: 'nonsense' })).body).toEqual(error('unknown-protocol-version'))
    expect((await post(host, { kind: 'invoke' })).body).toEqual(error('unknown-protocol-version'))
  })
  it('a kind other than invoke or check-invoke is unexpected-message-kind', async () => {
    expect((await post(host, { v: 2, kind: 'result' })).body).toEqual(error('unexpected-message-kind'))
  })
  it('an invoke without a non-empty tool.id, with a non-string version, without input or without ctx ids is malformed', async () => {
    const cases = [
      { v: 2, kind: 'invoke', input: {}, ctx: CTX },
      { v: 2, kind: 'invoke', tool: { id: '' }, input: {}, ctx: CTX },
      { v: 2, kind: 'invoke', tool: { id: 'echo', version: 1 }, input: {}, ctx: CTX },
      { v: 2, kind: 'invoke', tool: { id: 'echo' }, ctx: CTX },
      { v: 2, kind: 'invoke', tool: { id: 'echo' }, input: {}, ctx: { tenantId: 't' } },
      { v: 2, kind: 'invoke', tool: { id: 'echo' }, input: {}, ctx: { runId: 'r', tenantId: 5 } },
      { v: 2, kind: 'invoke', tool: { id: 'echo' }, input: {} },
    ]
    for (const message of cases) expect((await post(host, message)).body).toEqual(error('malformed-message'))
  })
  it('a check-invoke without a non-empty check.id or an object config is malformed', async () => {
    expect((await post(host, { v: 2, kind: 'check-invoke', config: {}, trace: {} })).body).toEqual(error('malformed-message'))
    expect((await post(host, { v: 2, kind: 'check-invoke', check: { id: 'threshold' }, config: [], trace: {} })).body).toEqual(
      error('malformed-message', { checkId: 'threshold' }),
    )
  })
  it('unknown extra fields pass through untouched', async () => {
    const res = await invoke(host, 'echo', { deep: { kept: [1, 'two'] } }, {}, { extension: { future: true } })
    expect(res.body).toEqual({ v: 2, kind: 'result', output: { deep: { kept: [1, 'two'] } } })
  })
})

describe('tools are resolved by id and version', () => {
  it('a named version runs exactly that version', async () => {
    const res = await post(host, { v: 2, kind: 'invoke', tool: { id: 'versioned', version: '2.0.0' }, input: {}, ctx: CTX })
    expect(res.body).toEqual({ v: 2, kind: 'result', output: { version: '2.0.0' } })
  })
  it('a version the index does not have is tool-version-mismatch', async () => {
    const res = await post(host, { v: 2, kind: 'invoke', tool: { id: 'echo', version: '9.9.9' }, input: {}, ctx: CTX })
    expect(res.body).toEqual(error('tool-version-mismatch', { toolId: 'echo' }))
  })
  it('no version means the only version; with several it asks for one', async () => {
    expect((await invoke(host, 'echo', { ok: 1 })).body).toEqual({ v: 2, kind: 'result', output: { ok: 1 } })
    expect((await invoke(host, 'versioned')).body).toEqual(error('tool-version-mismatch', { toolId: 'versioned' }))
  })
  it('an unknown tool is tool-not-in-pack naming it; an unknown check is check-not-in-pack', async () => {
    const tool = await invoke(host, 'nope')
    expect(tool.body).toEqual(error('tool-not-in-pack', { toolId: 'nope' }))
    expect(tool.body.message).toContain('nope')
    expect((await checkInvoke(host, 'nope', {})).body).toEqual(error('check-not-in-pack', { checkId: 'nope' }))
  })
  it('a declarative tool is tool-not-in-pack with a message saying the runtime runs it', async () => {
    const res = await invoke(host, 'declarative')
    expect(res.body).toEqual(error('tool-not-in-pack', { toolId: 'declarative' }))
    expect(res.body.message).toMatch(/runtime runs it/)
  })
  it('a built-in check is not served', async () => {
    expect((await checkInvoke(host, 'pii', {})).body).toEqual(error('check-not-in-pack', { checkId: 'pii' }))
  })
})

describe('input and output validation', () => {
  it('the handler gets the input with every schema default filled in, nested ones too', async () => {
    const res = await invoke(host, 'defaults', { name: 'Ana' })
    expect(res.body).toEqual({ v: 2, kind: 'result', output: { received: { name: 'Ana', greeting: 'Hello', options: { loud: false } } } })
  })
  it('input that breaks the schema is input-validation-failed with Ajv-shaped issues, and the handler does not run', async () => {
    const res = await invoke(host, 'defaults', { greeting: 5 })
    expect(res.body).toMatchObject({ code: 'input-validation-failed', toolId: 'defaults' })
    expect(res.body.issues).toContainEqual(
      expect.objectContaining({ instancePath: '', keyword: 'required', params: { missingProperty: 'name' }, schemaPath: '#/required' }),
    )
    expect(res.body.issues).toContainEqual(expect.objectContaining({ instancePath: '/greeting', keyword: 'type' }))
  })
  it('output that breaks the schema is output-validation-failed, validated as returned', async () => {
    const res = await invoke(host, 'bad-output')
    expect(res.body).toMatchObject({ code: 'output-validation-failed', toolId: 'bad-output' })
    expect(res.body.issues[0]).toMatchObject({ instancePath: '/count', keyword: 'type', message: 'must be number' })
  })
})

describe('throws', () => {
  it('a tool that throws answers handler-throw with the exact message and a cause', async () => {
    const res = await invoke(host, 'throws')
    expect(res.body).toMatchObject({
      code: 'handler-throw',
      toolId: 'throws',
      message: 'Handler for tool "throws" threw: TypeError: the widget is missing',
      cause: { name: 'TypeError', message: 'the widget is missing' },
    })
    expect(res.body.cause.stack).toContain('throws.js')
  })
  it('a check that throws answers handler-throw "Check "<id>" evaluate() threw: …"', async () => {
    const res = await checkInvoke(host, 'check-throws', {})
    expect(res.body).toMatchObject({
      code: 'handler-throw',
      checkId: 'check-throws',
      message: 'Check "check-throws" evaluate() threw: RangeError: trace too short',
      cause: { name: 'RangeError' },
    })
  })
})

describe('checks', () => {
  it('a check answers check-result with its verdict', async () => {
    const res = await checkInvoke(host, 'threshold', { min: 3 }, { score: 5 })
    expect(res.body).toEqual({ v: 2, kind: 'check-result', result: { passed: true, reason: 'score 5' } })
  })
  it('a bare boolean verdict is taken as { passed }', async () => {
    expect((await checkInvoke(host, 'bare-boolean', { answer: false })).body).toEqual({ v: 2, kind: 'check-result', result: { passed: false } })
  })
  it('a verdict without a boolean passed is output-validation-failed with checkId', async () => {
    expect((await checkInvoke(host, 'bad-verdict', {})).body).toEqual(error('output-validation-failed', { checkId: 'bad-verdict' }))
  })
  it('a config that breaks configSchema is input-validation-failed with the exact message, and the check does not run', async () => {
    const root = await checkInvoke(host, 'threshold', {}, { score: 1 })
    expect(root.body).toMatchObject({
      code: 'input-validation-failed',
      checkId: 'threshold',
      message: 'Check "threshold" config failed validation: must have required property \'min\'',
    })
    const nested = await checkInvoke(host, 'threshold', { min: 'x' }, { score: 1 })
    expect(nested.body).toMatchObject({ message: 'Check "threshold" config failed validation at /min: must be number' })
    expect(nested.body.issues[0]).toMatchObject({ instancePath: '/min', keyword: 'type' })
  })
})
