// A warm worker's aborts (workers/abort-registry.ts): the pack process broadcasts a call's id
// with its secret nonce, so pack code posting on the channel, which knows ids but not nonces,
// fires nobody's abortSignal.
import { describe, expect, it } from 'vitest'
import { abortCall, forgetCall, registerCall } from '../../workers/abort-registry.js'

describe("a running call's abort notice", () => {
  it('fires its abortSignal only with its nonce, and nothing once the call is forgotten', () => {
    const signal = registerCall(7, 'nonce-7')
    abortCall({ callId: 7, reason: 'deadline', nonce: 'guessed' })
    expect(signal.aborted).toBe(false)
    abortCall({ callId: 7, reason: 'deadline', nonce: 'nonce-7' })
    expect(signal.aborted).toBe(true)
    expect((signal.reason as Error).message).toBe('deadline exceeded')
    const later = registerCall(8, 'nonce-8')
    forgetCall(8)
    abortCall({ callId: 8, reason: 'cancelled', nonce: 'nonce-8' })
    expect(later.aborted).toBe(false)
  })
})
