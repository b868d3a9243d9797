// The front sends a pack process's answer on only when its head is the one the host's own code
// writes for its outcome (src/pool/answer-head.ts): pack code can write on its channel too.
import { describe, expect, it } from 'vitest'
import { answerHead } from '../../src/pool/answer-head.js'
import { errorMessage } from '../../src/protocol/messages.js'

const tool = { target: 'tool', pauses: false } as const
const pausing = { target: 'tool', pauses: true } as const
const check = { target: 'check', pauses: false } as const

describe("an answer a pack process sends is checked against the head the host's code writes", () => {
  it("passes every answer the host's code makes: a result, a check's verdict, an error of each code, an allowed pause", () => {
    expect(answerHead({ outcome: 'ok', body: JSON.stringify({ v: 2, kind: 'result', output: { a: 1 } }) }, tool)).toEqual({ kind: 'as-sent' })
    expect(answerHead({ outcome: 'ok', body: JSON.stringify({ v: 2, kind: 'check-result', result: { passed: true } }) }, check)).toEqual({ kind: 'as-sent' })
    const refused = errorMessage('input-validation-failed', 'no', { target: 'tool', id: 'x' })
    expect(answerHead({ outcome: 'input-validation-failed', body: JSON.stringify(refused) }, tool)).toEqual({ kind: 'as-sent' })
    expect(answerHead({ outcome: 'ok', body: JSON.stringify({ v: 2, kind: 'pause', timeoutMs: 5 }) }, pausing)).toEqual({ kind: 'as-sent' })
  })

  it('refuses a pause from a tool whose index entry does not say pauses: true', () => {
    expect(answerHead({ outcome: 'ok', body: JSON.stringify({ v: 2, kind: 'pause', timeoutMs: 2073600000 }) }, tool)).toEqual({ kind: 'pause-not-allowed' })
  })

  it('refuses an outcome its body does not say, a body of another kind, and a body that does not end as JSON does', () => {
    const other = JSON.stringify(errorMessage('tool-not-in-pack', 'forged', { target: 'tool', id: 'x' }))
    expect(answerHead({ outcome: 'ok', body: other }, tool)).toEqual({ kind: 'not-as-sent' })
    expect(answerHead({ outcome: 'handler-throw', body: other }, tool)).toEqual({ kind: 'not-as-sent' })
    expect(answerHead({ outcome: 'ok', body: JSON.stringify({ v: 2, kind: 'check-result', result: { passed: true } }) }, tool)).toEqual({ kind: 'not-as-sent' })
    expect(answerHead({ outcome: 'ok', body: JSON.stringify({ v: 2, kind: 'result', output: 1 }) }, check)).toEqual({ kind: 'not-as-sent' })
    expect(answerHead({ outcome: 'handler-throw', body: 'not json at all' }, tool)).toEqual({ kind: 'not-as-sent' })
    expect(answerHead({ outcome: 'ok', body: '{"v":2,"kind":"result","output":' }, tool)).toEqual({ kind: 'not-as-sent' })
  })
})
