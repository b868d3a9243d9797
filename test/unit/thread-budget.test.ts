// The thread budget: no more computing calls than cores; more only while calls wait on I/O.
import type { Worker } from 'node:worker_threads'
import { describe, expect, it } from 'vitest'
import { createThreadBudget } from '../../src/pool/thread-budget.js'

/** A stand-in worker whose event loop is busy a fixed share of the time. */
function fakeWorker(busyShare: () => number): Worker {
  let active = 0
  let idle = 0
  let at = performance.now()
  const read = () => {
    const now = performance.now()
    active += (now - at) * busyShare()
    idle += (now - at) * (1 - busyShare())
    at = now
    return { active, idle, utilization: active / (active + idle || 1) }
  }
  return {
    performance: {
      eventLoopUtilization(a?: { active: number; idle: number }, b?: { active: number; idle: number }) {
        if (a === undefined) return read()
        const da = a.active - (b?.active ?? 0)
        const di = a.idle - (b?.idle ?? 0)
        return { active: da, idle: di, utilization: da / (da + di || 1) }
      },
    },
  } as unknown as Worker
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
  it('lets one more call start for each long call whose thread waits on I/O', async () => {
    const threads = [fakeWorker(() => 0), fakeWorker(() => 0)]
    const budget = createThreadBudget(2, () => threads)
    const started: number[] = []
    for (let i = 0; i < 5; i++) budget.enqueue(() => started.push(i))
    expect(started).toEqual([0, 1])
    await sleep(60)
    expect(started.length).toBeGreaterThanOrEqual(4)
    budget.close()
  })
  it('starts nothing more while the threads holding calls compute', async () => {
    const threads = [fakeWorker(() => 1), fakeWorker(() => 1)]
    const budget = createThreadBudget(2, () => threads)
    const started: number[] = []
    for (let i = 0; i < 5; i++) budget.enqueue(() => started.push(i))
    await sleep(60)
    expect(started).toEqual([0, 1])
    budget.close()
  })
})
