// When a call may wait behind another on its worker (workers/line-up.ts): only behind a young
// call of a tool known to be short, and only a few deep.
import { describe, expect, it } from 'vitest'
import { BEHIND_MS, createLineUp, LINE } from '../../workers/line-up.js'

describe('waiting behind a call on its worker', () => {
  it('is allowed behind a call that just started, of a tool whose calls are short', () => {
    const policy = createLineUp()
    expect(policy.mayWaitBehind('echo', 100, 1, 100.5)).toBe(false) // nothing known of echo yet
    policy.took('echo', 0.3)
    expect(policy.mayWaitBehind('echo', 100, 1, 100.5)).toBe(true)
  })

  it('is refused behind a call that has run a while, a tool whose calls are long, or a full line', () => {
    const policy = createLineUp()
    policy.took('echo', 0.3)
    policy.took('slow', 40)
    expect(policy.mayWaitBehind('echo', 100, 1, 100 + BEHIND_MS)).toBe(false)
    expect(policy.mayWaitBehind('slow', 100, 1, 100.5)).toBe(false)
    expect(policy.mayWaitBehind('echo', 100, LINE, 100.5)).toBe(false)
  })

  it("follows how long a tool's calls take now: a tool that turned slow is waited behind no more", () => {
    const policy = createLineUp()
    policy.took('tool', 0.3)
    for (let i = 0; i < 5; i++) policy.took('tool', 50)
    expect(policy.mayWaitBehind('tool', 100, 1, 100.5)).toBe(false)
  })
})
