// How many calls may run on worker threads at once. More busy threads than cores only make
// them fight for the CPU (measured: 32 threads on 2 cores serve half of what 2 do), so calls
// past `cores` wait here, in the front — unless running calls are waiting on I/O rather than
// computing: their cores are free then, and one more call may start for each. A call counts
// as waiting when it has run for a while (LONG_MS) and the threads that hold calls are idle,
// read from the workers' event-loop utilization, sampled only while calls queue here. Short
// calls never count: a worker idle between short calls waits for the front, not for I/O.
import type { Worker } from 'node:worker_threads'

type Utilization = ReturnType<Worker['performance']['eventLoopUtilization']>

export type BudgetTicket = { cancel(): boolean; done(): void }

export type ThreadBudget = {
  /** Runs `start` now if the budget allows, else once it does. */
  enqueue(start: () => void): BudgetTicket
  running(): number
  close(): void
}

const SAMPLE_EVERY_MS = 5
const LONG_MS = 10
const IDLE_BELOW = 0.5

type Item = { start: () => void; startedAt: number; state: 'queued' | 'running' | 'ended' }

export function createThreadBudget(cores: number, threads: () => Worker[]): ThreadBudget {
  const runningItems = new Set<Item>()
  let extra = 0
  let queue: Item[] = []
  let head = 0
  let sampler: NodeJS.Timeout | undefined
  let last = new WeakMap<Worker, Utilization>()

  function pump(): void {
    while (head < queue.length && runningItems.size < cores + extra) {
      const item = queue[head++] as Item
      if (item.state !== 'queued') continue
      item.state = 'running'
      item.startedAt = performance.now()
      runningItems.add(item)
      item.start()
    }
    if (head === queue.length) {
      queue = []
      head = 0
    }
    const waiting = queue.length - head > 0
    if (waiting && sampler === undefined) {
      last = new WeakMap()
      sampler = setInterval(sample, SAMPLE_EVERY_MS)
    } else if (!waiting && sampler !== undefined) {
      clearInterval(sampler)
      sampler = undefined
      extra = 0
    }
  }

  function sample(): void {
    const all = threads()
    let idle = 0
    for (const worker of all) {
      let now: Utilization
      try {
        now = worker.performance.eventLoopUtilization()
      } catch {
        continue // a worker being terminated
      }
      const before = last.get(worker)
      last.set(worker, now)
      if (before !== undefined && worker.performance.eventLoopUtilization(now, before).utilization < IDLE_BELOW) idle++
    }
    const now = performance.now()
    let long = 0
    for (const item of runningItems) if (now - item.startedAt >= LONG_MS) long++
    // A thread holding no call is parked in Atomics.wait, which its utilization counts as
    // busy: the idle threads are the ones whose call waits on I/O.
    extra = Math.min(long, idle)
    pump()
  }

  return {
    enqueue(start) {
      const item: Item = { start, startedAt: 0, state: 'queued' }
      queue.push(item)
      pump()
      return {
        cancel() {
          if (item.state !== 'queued') return false
          item.state = 'ended'
          return true
        },
        done() {
          if (item.state !== 'running') return
          item.state = 'ended'
          runningItems.delete(item)
          pump()
        },
      }
    },
    running: () => runningItems.size,
    close() {
      clearInterval(sampler)
    },
  }
}
