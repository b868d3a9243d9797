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
//
// Calls wait in lines by owner (a strict call's tenant): a free place goes to the owner with a
// call waiting and the fewest calls running, of those the one whose call started longest ago,
// and each owner's calls keep their order. One tenant's burst of long calls then delays another
// tenant's call by about one call, not by the burst (it waited behind all of it in one line
// before stop 30). Calls without an owner share one line, in their order.

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
  /** Runs `start` now if the budget allows, else once it can, taking turns with other owners' calls. */
  enqueue(start: () => void, owner?: string): BudgetTicket
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

type Item = { start: () => void; owner: string; startedAt: number; state: 'queued' | 'running' | 'ended' }

/** Calls waiting, in a line for each owner; `turns` holds the owners with a line, in the order they came or were last served (a tie goes to the first). */
type Waiting = { lines: Map<string, Item[]>; turns: string[]; count: number }

/** How an owner stands: calls running, and when its last one started (0: none since it came). */
type Standing = { running: number; startedLast: number }

/** The oldest waiting call of the owner that stands first (fewest running, then served longest ago); undefined when none waits. */
function nextWaiting(waiting: Waiting, standing: Map<string, Standing>): Item | undefined {
  const before = (a: string, b: string): boolean => {
    const x = standing.get(a)
    const y = standing.get(b)
    const runningX = x?.running ?? 0
    const runningY = y?.running ?? 0
    return runningX !== runningY ? runningX < runningY : (x?.startedLast ?? 0) < (y?.startedLast ?? 0)
  }
  while (waiting.turns.length > 0) {
    let at = 0
    for (let i = 1; i < waiting.turns.length; i++) if (before(waiting.turns[i] as string, waiting.turns[at] as string)) at = i
    const owner = waiting.turns.splice(at, 1)[0] as string
    const line = waiting.lines.get(owner) as Item[]
    // A cancelled call stays in its line until it comes to its head: it is passed over then.
    let item: Item | undefined
    while (item === undefined && line.length > 0) {
      const next = line.shift() as Item
      if (next.state === 'queued') item = next
    }
    if (line.length > 0) waiting.turns.push(owner)
    else waiting.lines.delete(owner)
    if (item !== undefined) return item
    // Its calls all went before their turn: with nothing running either, it is forgotten.
    if (standing.get(owner)?.running === 0) standing.delete(owner)
  }
  return undefined
}

export function createThreadBudget(cores: number, holders: () => Holder[]): ThreadBudget {
  const runningItems = new Set<Item>()
  /** Owners with calls running or waiting, and how each stands. */
  const standing = new Map<string, Standing>()
  let starts = 0
  let extra = 0
  const waiting: Waiting = { lines: new Map(), turns: [], count: 0 }
  let sampler: NodeJS.Timeout | undefined
  /** Per holder: busy time and when it was read at the window's start, and whether it was idle over the last window. */
  let last = new WeakMap<object, { busy: number; at: number; idle: boolean }>()

  function room(): boolean {
    return runningItems.size < cores + extra
  }

  function run(item: Item): void {
    item.state = 'running'
    item.startedAt = performance.now()
    runningItems.add(item)
    const owner = standing.get(item.owner)
    if (owner === undefined) standing.set(item.owner, { running: 1, startedLast: ++starts })
    else {
      owner.running++
      owner.startedLast = ++starts
    }
    item.start()
  }

  function end(item: Item): void {
    runningItems.delete(item)
    item.state = 'ended'
    const owner = standing.get(item.owner) as Standing
    owner.running--
    // Forgotten once it has nothing running or waiting: its next call comes as a newcomer's.
    if (owner.running === 0 && !waiting.lines.has(item.owner)) standing.delete(item.owner)
  }

  function pump(): void {
    while (waiting.count > 0 && room()) {
      const item = nextWaiting(waiting, standing) as Item
      waiting.count--
      run(item)
    }
    // Only cancelled calls are left in the lines: none will take a turn.
    if (waiting.count === 0 && waiting.turns.length > 0) {
      for (const owner of waiting.turns) if (standing.get(owner)?.running === 0) standing.delete(owner)
      waiting.lines.clear()
      waiting.turns.length = 0
    }
    const watch = waiting.count > 0
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
    enqueue(start, owner = '') {
      const item: Item = { start, owner, startedAt: 0, state: 'queued' }
      // Nobody waits and there is room: it starts at once, in no line.
      if (waiting.count === 0 && room()) run(item)
      else {
        const line = waiting.lines.get(owner)
        if (line !== undefined) line.push(item)
        else {
          waiting.lines.set(owner, [item])
          waiting.turns.push(owner)
        }
        waiting.count++
        pump()
      }
      return {
        cancel() {
          if (item.state !== 'queued') return false
          item.state = 'ended'
          waiting.count--
          pump()
          return true
        },
        done() {
          if (item.state !== 'running') return
          end(item)
          pump()
        },
        handOver() {
          if (item.state === 'running') item.startedAt = performance.now()
        },
      }
    },
    running: () => runningItems.size,
    full: () => waiting.count > 0 || !room(),
    close() {
      clearInterval(sampler)
      sampler = undefined
    },
  }
}
