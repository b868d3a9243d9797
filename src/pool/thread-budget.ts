// How many calls may run on worker threads at once. More busy threads than cores only make
// them fight for the CPU (measured: 32 threads on 2 cores serve half of what 2 do), so calls
// past `cores` wait here, in the front — unless running calls are waiting on I/O rather than
// computing: their cores are free then, and one more call may start for each. A call counts
// as waiting when it has run for a while (LONG_MS) and the threads that hold calls are idle,
// read from the workers' event-loop utilization, sampled only while calls queue here. Short
// calls never count: a worker idle between short calls waits for the front, not for I/O.
// A call that finds every core taken may instead wait *behind* a running call, in that call's
// worker's mailbox (mailbox.ts): it starts the moment the call before it ends, without a trip
// through the front. It counts as running from then (promote). One that has waited behind for
// STEAL_MS is taken back and queued here again, so a call never waits long behind a slow one.

/**
 * Something that holds calls (a worker thread, a strict call's process) and how long it has
 * been busy in all, in ms: event-loop active time for a thread, CPU time for a process.
 */
export type Holder = { key: object; busyMs(): number | undefined }

export type BudgetTicket = {
  /** False once the call has started or waits behind another. */
  cancel(): boolean
  /** The call's worker is done with it (or it never ran): its place goes to the next. */
  done(): void
  /** The call that waited behind another is running now. */
  promote(): void
}

/** Puts a call behind a running one; returns how to take it back (true: it had not started). */
export type PlaceBehind = () => (() => boolean) | undefined

export type ThreadBudget = {
  /** Runs `start` now if the budget allows, else places it behind a running call or runs it once it can. */
  enqueue(start: () => void, behind?: PlaceBehind): BudgetTicket
  /** Calls on worker threads, running or waiting behind one. */
  running(): number
  close(): void
}

const SAMPLE_EVERY_MS = 5
const LONG_MS = 10
const IDLE_BELOW = 0.5
/** A holder's utilization is read over at least this long (a process's CPU time moves in 10 ms ticks). */
const WINDOW_MS = 40
/** How long a call may wait behind another before it is taken back (exported for tests). */
export const STEAL_MS = 5

type Item = {
  start: () => void
  behind: PlaceBehind | undefined
  revoke: (() => boolean) | undefined
  startedAt: number
  state: 'queued' | 'running' | 'behind' | 'ended'
}

export function createThreadBudget(cores: number, holders: () => Holder[]): ThreadBudget {
  const runningItems = new Set<Item>()
  const behindItems = new Set<Item>()
  let extra = 0
  let queue: Item[] = []
  let head = 0
  let sampler: NodeJS.Timeout | undefined
  /** Per holder: busy time and when it was read at the window's start, and whether it was idle over the last window. */
  let last = new WeakMap<object, { busy: number; at: number; idle: boolean }>()

  function pump(): void {
    while (head < queue.length) {
      const item = queue[head] as Item
      if (item.state !== 'queued') {
        head++
      } else if (runningItems.size < cores + extra) {
        head++
        item.state = 'running'
        item.startedAt = performance.now()
        runningItems.add(item)
        item.start()
      } else {
        // In order: a call that cannot wait behind another keeps the ones after it queued too.
        const revoke = item.behind?.()
        if (revoke === undefined) break
        head++
        item.state = 'behind'
        item.revoke = revoke
        item.startedAt = performance.now()
        behindItems.add(item)
      }
    }
    if (head === queue.length) {
      queue = []
      head = 0
    }
    const watch = queue.length - head > 0 || behindItems.size > 0
    if (watch && sampler === undefined) {
      last = new WeakMap()
      sampler = setInterval(sample, SAMPLE_EVERY_MS)
    } else if (!watch && sampler !== undefined) {
      clearInterval(sampler)
      sampler = undefined
      extra = 0
    }
  }

  /** Calls that waited behind a slow one for too long go back to the head of the queue, to run on their own. */
  function stealBack(now: number): void {
    const stolen: Item[] = []
    for (const item of behindItems) {
      if (now - item.startedAt < STEAL_MS || item.revoke?.() !== true) continue
      behindItems.delete(item)
      item.state = 'queued'
      item.behind = undefined
      item.revoke = undefined
      stolen.push(item)
    }
    if (stolen.length === 0) return
    queue = [...stolen, ...queue.slice(head)]
    head = 0
  }

  function sample(): void {
    const at = performance.now()
    let idle = 0
    for (const holder of holders()) {
      let busy: number | undefined
      try {
        busy = holder.busyMs()
      } catch {
        continue // a worker being terminated
      }
      if (busy === undefined) continue
      const before = last.get(holder.key)
      if (before === undefined) {
        last.set(holder.key, { busy, at, idle: false })
        continue
      }
      if (at - before.at >= WINDOW_MS) last.set(holder.key, { busy, at, idle: (busy - before.busy) / (at - before.at) < IDLE_BELOW })
      if (last.get(holder.key)!.idle) idle++
    }
    const now = performance.now()
    let long = 0
    for (const item of runningItems) if (now - item.startedAt >= LONG_MS) long++
    // A thread holding no call is parked in Atomics.wait, which its utilization counts as
    // busy: the idle threads are the ones whose call waits on I/O.
    extra = Math.min(long, idle)
    stealBack(now)
    pump()
  }

  return {
    enqueue(start, behind) {
      const item: Item = { start, behind, revoke: undefined, startedAt: 0, state: 'queued' }
      queue.push(item)
      pump()
      return {
        cancel() {
          if (item.state !== 'queued') return false
          item.state = 'ended'
          return true
        },
        done() {
          if (item.state === 'running') runningItems.delete(item)
          else if (item.state === 'behind') behindItems.delete(item)
          else return
          item.state = 'ended'
          pump()
        },
        promote() {
          if (item.state !== 'behind') return
          behindItems.delete(item)
          item.state = 'running'
          item.startedAt = performance.now()
          runningItems.add(item)
        },
      }
    },
    running: () => runningItems.size + behindItems.size,
    close() {
      clearInterval(sampler)
    },
  }
}
