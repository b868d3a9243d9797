// How fast the host reads a pipe pack code writes on (src/pool/read-rate.ts), on a clock the
// test sets: a first burst passes at once, past it the wait is what the budget needs to be
// back out of debt, and the budget refills at its rate up to the burst, never beyond.
import { describe, expect, it } from 'vitest'
import { createReadRate } from '../../src/pool/read-rate.js'

describe('a read rate', () => {
  it('lets its first burst through at once, then asks for the time the rate needs', () => {
    const clock = { ms: 0 }
    const rate = createReadRate(100, 200, () => clock.ms)
    expect(rate.spend(200)).toBe(0)
    expect(rate.spend(50)).toBe(500)
  })
  it('refills at its rate, up to the burst and no further', () => {
    const clock = { ms: 0 }
    const rate = createReadRate(100, 200, () => clock.ms)
    rate.spend(200)
    clock.ms += 1_000
    expect(rate.spend(100)).toBe(0)
    clock.ms += 60_000
    expect(rate.spend(200)).toBe(0)
    expect(rate.spend(1)).toBe(10)
  })
})
