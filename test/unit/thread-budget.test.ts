// The thread budget: no more computing calls than cores; more only while calls wait on I/O.
import { describe, expect, it } from 'vitest'
import { createThreadBudget, type Holder } from '../../src/pool/thread-budget.js'

/** A stand-in holder (a thread or a process) busy a fixed share of the time. */
function fakeHolder(busyShare: () => number): Holder {
  let busy = 0
  let at = performance.now()
  return {
    key: {},
    busyMs() {
      const now = performance.now()
      busy += (now - at) * busyShare()
      at = now
      return busy
    },
  }
}

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms))

describe('createThreadBudget', () => {
  it('starts at most `cores` calls, and the next one when one is done', () => {
    const budget = createThreadBudget(2, () => [])
    const started: number[] = []
    const tickets = [0, 1, 2, 3].map((i) => budget.enqueue(() => started.push(i)))
    expect(started).toEqual([0, 1])
    tickets[0]!.done()
    expect(started).toEqual([0, 1, 2])
    budget.close()
  })
  it('a cancelled call never starts, and a started one cannot be cancelled', () => {
    const budget = createThreadBudget(1, () => [])
    const started: string[] = []
    const first = budget.enqueue(() => started.push('a'))
    const second = budget.enqueue(() => started.push('b'))
    const third = budget.enqueue(() => started.push('c'))
    expect(first.cancel()).toBe(false)
    expect(second.cancel()).toBe(true)
    first.done()
    expect(started).toEqual(['a', 'c'])
    third.done()
    expect(budget.running()).toBe(0)
    budget.close()
  })
  it('lets one more call start for each long call whose thread or process waits on I/O', async () => {
    const threads = [fakeHolder(() => 0), fakeHolder(() => 0)]
    const budget = createThreadBudget(2, () => threads)
    const started: number[] = []
    for (let i = 0; i < 5; i++) budget.enqueue(() => started.push(i))
    expect(started).toEqual([0, 1])
    await sleep(120)
    expect(started.length).toBeGreaterThanOrEqual(4)
    budget.close()
  })
  it('starts nothing more while the threads holding calls compute', async () => {
    const threads = [fakeHolder(() => 1), fakeHolder(() => 1)]
    const budget = createThreadBudget(2, () => threads)
    const started: number[] = []
    for (let i = 0; i < 5; i++) budget.enqueue(() => started.push(i))
    await sleep(60)
    expect(started).toEqual([0, 1])
    budget.close()
  })
})
