// How many calls may compute at once. More busy threads than cores only make them fight for
// the CPU, so calls past `cores` wait here — unless running calls are waiting on I/O rather
// than computing: their cores are free then, and one more call may start for each. A call
// counts as waiting when it has run for a while (LONG_MS) and the threads or processes that
// hold calls are idle, read from their busy time, sampled only while calls queue here. Short
// calls never count: a worker idle between short calls waits for its caller, not for I/O.
//
// Why this is ours and not Piscina's queue: Piscina runs as many tasks as it has threads
// (`maxThreads`, fixed when the pool is made) and cannot tell a thread that computes from one
// whose task awaits I/O. So the warm pool (workers/warm-pool.ts) hands Piscina a task only
// when this budget lets the call start, and Piscina's own queue holds a task only while the
// worker it will run on starts. A call the warm pool puts behind a short one on its worker
// takes that one's place when it ends (handOver). Strict calls' processes are budgeted here
// the same way.

/**
 * Something that holds calls (a worker thread, a strict call's process) and how long it has
 * been busy in all, in ms: event-loop active time for a thread, CPU time for a process.
 */
export type Holder = { key: object; busyMs(): number | undefined }

export type BudgetTicket = {
  /** False once the call has started. */
  cancel(): boolean
  /** The call's worker is done with it (or it never ran): its place goes to the next. */
  done(): void
  /** Another call runs in this place now (it waited behind this one on its worker): its time starts now. */
  handOver(): void
}

export type ThreadBudget = {
  /** Runs `start` now if the budget allows, else once it can. */
  enqueue(start: () => void): BudgetTicket
  /** Calls started and not done. */
  running(): number
  /** True when a call enqueued now would wait. */
  full(): boolean
  close(): void
}

const SAMPLE_EVERY_MS = 5
const LONG_MS = 10
const IDLE_BELOW = 0.5
/** A holder's utilization is read over at least this long (a process's CPU time moves in 10 ms ticks). */
const WINDOW_MS = 40

type Item = { start: () => void; startedAt: number; state: 'queued' | 'running' | 'ended' }

export function createThreadBudget(cores: number, holders: () => Holder[]): ThreadBudget {
  const runningItems = new Set<Item>()
  let extra = 0
  let queue: Item[] = []
  let head = 0
  let sampler: NodeJS.Timeout | undefined
  /** Per holder: busy time and when it was read at the window's start, and whether it was idle over the last window. */
  let last = new WeakMap<object, { busy: number; at: number; idle: boolean }>()

  function room(): boolean {
    return runningItems.size < cores + extra
  }

  function pump(): void {
    while (head < queue.length && room()) {
      const item = queue[head++] as Item
      if (item.state !== 'queued') continue
      item.state = 'running'
      item.startedAt = performance.now()
      runningItems.add(item)
      item.start()
    }
    while (head < queue.length && (queue[head] as Item).state !== 'queued') head++
    if (head === queue.length) {
      queue = []
      head = 0
    }
    const watch = queue.length - head > 0
    if (watch && sampler === undefined) {
      last = new WeakMap()
      sampler = setInterval(sample, SAMPLE_EVERY_MS)
    } else if (!watch && sampler !== undefined) {
      clearInterval(sampler)
      sampler = undefined
      extra = 0
    }
  }

  function sample(): void {
    const at = performance.now()
    let long = 0
    for (const item of runningItems) if (at - item.startedAt >= LONG_MS) long++
    // No call has run long enough to count as waiting: nothing to read (a strict call's process is read from /proc).
    if (long === 0) {
      extra = 0
      pump()
      return
    }
    let idle = 0
    for (const holder of holders()) {
      const before = last.get(holder.key)
      // Read only once its window is over: a strict call's process is read from /proc, and its CPU time moves in ticks anyway.
      if (before !== undefined && at - before.at < WINDOW_MS) {
        if (before.idle) idle++
        continue
      }
      let busy: number | undefined
      try {
        busy = holder.busyMs()
      } catch {
        continue // a worker being terminated
      }
      if (busy === undefined) continue
      if (before === undefined) {
        last.set(holder.key, { busy, at, idle: false })
        continue
      }
      const now = { busy, at, idle: (busy - before.busy) / (at - before.at) < IDLE_BELOW }
      last.set(holder.key, now)
      if (now.idle) idle++
    }
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
          pump()
          return true
        },
        done() {
          if (item.state !== 'running') return
          runningItems.delete(item)
          item.state = 'ended'
          pump()
        },
        handOver() {
          if (item.state === 'running') item.startedAt = performance.now()
        },
      }
    },
    running: () => runningItems.size,
    full: () => head < queue.length || !room(),
    close() {
      clearInterval(sampler)
      sampler = undefined
    },
  }
}
