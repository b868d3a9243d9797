// The helpers the package exports to pack authors.
import { describe, expect, it } from 'vitest'
import { connectionRejected, defineCheck, defineTool, idempotencyKey } from '../../src/sdk/index.js'
import { findCheck, findHandler } from '../../workers/module-shapes.js'

describe('idempotencyKey', () => {
  // Expected values computed independently with Python:
  //   uuid.uuid5(UUID('a70d5bff-…'), json.dumps(parts, separators=(',', ':'), ensure_ascii=False))
  it("matches an independent computation, with and without the model's call id", () => {
    expect(idempotencyKey({ runId: 'run-1', stepScope: 'node:fetch', toolId: 'acme.fetch' })).toBe('006b75e4-6aff-5268-a1ea-8de2659ec34d')
    expect(idempotencyKey({ runId: 'run-1', stepScope: 'node:fetch', toolId: 'acme.fetch', modelCallId: 'call_abc' })).toBe(
      '57f6b20e-b2c5-52ea-9280-d77f4e000513',
    )
  })
  it('writes characters beyond ASCII as themselves, never as \\u escapes', () => {
    expect(idempotencyKey({ runId: 'rün-✓', stepScope: 'loop[2]/step "q"', toolId: 'acme.日本' })).toBe('f18c8913-f3e3-5300-ac75-b32c3b5879c3')
    expect(idempotencyKey({ runId: 'r', stepScope: 's', toolId: 't', modelCallId: 'cé€😀' })).toBe('c37af6e5-2f7d-57b0-a493-b2812c593b32')
  })
  it('is a version 5, RFC variant UUID', () => {
    expect(idempotencyKey({ runId: 'a', stepScope: 'b', toolId: 'c' })).toMatch(/^[0-9a-f]{8}-[0-9a-f]{4}-5[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/)
  })
})

describe('defineTool and defineCheck', () => {
  it('return the shapes the host loads', async () => {
    const tool = defineTool({ input: { type: 'object' }, output: { type: 'object' }, handler: (input: { n: number }) => ({ twice: input.n * 2 }) })
    const handler = findHandler({ default: tool })
    expect(await handler!({ n: 2 }, {})).toEqual({ twice: 4 })
    const check = defineCheck({ evaluate: (config: { min: number }, trace: { score: number }) => trace.score >= config.min })
    expect(await findCheck({ default: check })!({ min: 1 }, { score: 2 }, {})).toBe(true)
  })
  it('refuse a definition without a handler, schemas or evaluate', () => {
    expect(() => defineTool({ input: {}, output: {} } as never)).toThrow(/handler/)
    expect(() => defineTool({ input: 'x', output: {}, handler: () => 1 } as never)).toThrow(/input/)
    expect(() => defineCheck({} as never)).toThrow(/evaluate/)
  })
})

describe('connectionRejected', () => {
  it('builds the error the host answers connection-rejected for', () => {
    const err = connectionRejected('mail')
    expect(err).toBeInstanceOf(Error)
    expect(err).toMatchObject({ code: 'connection-rejected', connection: 'mail' })
    expect(err.message).toContain('mail')
  })
})
