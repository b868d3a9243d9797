// The thread budget: no more computing calls than cores; more only while calls wait on I/O.
import { describe, expect, it } from 'vitest'
import { createThreadBudget, type Holder } from '../../src/pool/thread-budget.js'
import { within } from '../helpers/host.js'

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
    expect(await within(5_000, () => started.length >= 4), 'two more started').toBe(true)
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

describe('owners take turns for the cores', () => {
  it("one owner's burst waiting in the budget: another owner's call starts next, not after the burst", () => {
    const budget = createThreadBudget(2, () => [])
    const started: string[] = []
    const tickets = new Map<string, ReturnType<typeof budget.enqueue>>()
    const call = (name: string, owner: string) =>
      tickets.set(
        name,
        budget.enqueue(() => started.push(name), owner),
      )
    for (let i = 0; i < 10; i++) call(`a${i}`, 'tenant-a')
    call('b0', 'tenant-b')
    call('b1', 'tenant-b')
    expect(started).toEqual(['a0', 'a1'])
    tickets.get('a0')?.done()
    expect(started.at(-1)).toBe('b0')
    tickets.get('a1')?.done()
    tickets.get('b0')?.done()
    // Turn by turn, each owner's calls in their order.
    expect(started).toEqual(['a0', 'a1', 'b0', 'a2', 'b1'])
    budget.close()
  })

  it('with one core, the owner whose call just ended waits its turn: the other owner, never served, goes first', () => {
    const budget = createThreadBudget(1, () => [])
    const started: string[] = []
    const a0 = budget.enqueue(() => started.push('a0'), 'a')
    for (let i = 1; i < 4; i++) budget.enqueue(() => started.push(`a${i}`), 'a')
    const b0 = budget.enqueue(() => started.push('b0'), 'b')
    a0.done()
    expect(started).toEqual(['a0', 'b0'])
    b0.done()
    expect(started).toEqual(['a0', 'b0', 'a1'])
    budget.close()
  })

  it('a cancelled call is passed over without costing its owner a turn, and calls without an owner keep their order', () => {
    const budget = createThreadBudget(1, () => [])
    const started: string[] = []
    const first = budget.enqueue(() => started.push('x0'))
    const a1 = budget.enqueue(() => started.push('a1'), 'a')
    budget.enqueue(() => started.push('a2'), 'a')
    budget.enqueue(() => started.push('b1'), 'b')
    budget.enqueue(() => started.push('x1'))
    expect(a1.cancel()).toBe(true)
    first.done()
    expect(started).toEqual(['x0', 'a2'])
    expect(budget.full()).toBe(true)
    budget.close()
  })

  it('with only cancelled calls left, nothing waits and the next call starts at once', () => {
    const budget = createThreadBudget(1, () => [])
    const started: string[] = []
    const first = budget.enqueue(() => started.push('first'), 'a')
    const waiting = [0, 1, 2].map((i) => budget.enqueue(() => started.push(`w${i}`), 'b'))
    for (const ticket of waiting) expect(ticket.cancel()).toBe(true)
    first.done()
    expect(budget.full()).toBe(false)
    budget.enqueue(() => started.push('next'), 'c')
    expect(started).toEqual(['first', 'next'])
    budget.close()
  })
})
