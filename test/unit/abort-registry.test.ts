// A warm worker's record of the calls waiting their turn on it (workers/abort-registry.ts): a
// withdrawn call can be sent back to the same worker before its first task's turn comes (the
// worker was between calls, so the pool saw it idle), and the two tasks of that one call must
// not read each other's state: the first must not run, the second must.
import { describe, expect, it } from 'vitest'
import { abortCall, callWaits, turnCame } from '../../workers/abort-registry.js'

describe('a call withdrawn and sent again to the same worker before its first turn came', () => {
  it('its first task runs nothing when its turn comes, and its second task runs once', () => {
    const withdrawnFirst: string[] = []
    const first = callWaits(7, 'nonce-7', () => withdrawnFirst.push('first'))
    abortCall({ callId: 7, reason: 'withdrawn', nonce: 'nonce-7' })
    expect(withdrawnFirst).toEqual(['first'])
    const second = callWaits(7, 'nonce-7', () => withdrawnFirst.push('second'))
    expect(turnCame(7, first)).toBe(true)
    expect(turnCame(7, second)).toBe(false)
  })

  it('a notice without the call nonce withdraws nothing', () => {
    const mine = callWaits(8, 'nonce-8', () => undefined)
    abortCall({ callId: 8, reason: 'withdrawn', nonce: 'guessed' })
    expect(turnCame(8, mine)).toBe(false)
  })
})
