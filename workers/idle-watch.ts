// A limited tool's code can go on running on its worker after its call has answered: a
// replaced Atomics.wait runs inside Piscina's park loop between tasks, and microtasks queued
// as it answered run after the end-of-call memory check (a red-team pass, stop 38). There no
// call's cpuMs or memMB counts, and such code burned most of a core, or held a gigabyte, for
// as long as it liked. So a pool with limited tools looks at each worker from outside it: its
// own CPU time (worker.cpuUsage(), Node >= 24.6, which answers while the thread spins) and, for
// memMB, while it runs no call, its heap and external memory as the call's watch counts them
// (worker.getHeapStatistics(), which answers while it is parked). CPU is no call's when the
// calls on the worker do not account for it: a worker's CPU time is at most its busy time while
// it runs a call, so what its CPU grew by, less its calls' busy time, is what it spent between
// calls. That is counted across calls, not only while none reaches it: a tool called every
// 0.4 s otherwise spent its worker's whole core between calls (a second red-team pass). A
// worker whose CPU no call accounts for grows by more than `cpuLimitMs` between two reads
// `everyMs` apart, or that holds more than memMB with no call on it, is handed to `passed` to be
// ended. Before its first call a worker starts (Node's own start, the pack's modules): it may
// spend up to STARTUP_CPU_MS in all then, which module top-level code that replaced
// Atomics.wait passes within seconds.
import type { Worker } from 'node:worker_threads'

/** How often workers are read. */
export const IDLE_CHECK_MS = 500
/** CPU a worker may spend between two reads that its calls do not account for (a parked worker spends next to none). */
export const IDLE_CPU_MS = 100
/** CPU a worker may spend in all before its first call. */
export const STARTUP_CPU_MS = 5_000

/**
 * A worker as the pool sees it: whether a call is on it, whether the pool is ending it, how
 * many calls have reached it so far, and the busy time (ms, its event loop's) of those calls
 * on it, the one it runs now included.
 */
export type WorkerCalls = { busy: boolean; ending: boolean; reached: number; callsBusyMs: number }

export type IdleWatchOptions = {
  workers: () => Iterable<Worker>
  calls: (worker: Worker) => WorkerCalls
  /** The group's memMB, if it has one. */
  memMB: number | undefined
  passed: (worker: Worker, limit: 'cpu' | 'memory') => void
  everyMs?: number
  cpuLimitMs?: number
}

export type IdleWatch = { stop(): void }

export function watchIdleWorkers(options: IdleWatchOptions): IdleWatch {
  const { calls, memMB, everyMs = IDLE_CHECK_MS, cpuLimitMs = IDLE_CPU_MS } = options
  /** Each worker's CPU time (µs) and its calls' busy time (ms) at the last read after its first call. */
  const last = new WeakMap<Worker, { cpuUs: number; callsBusyMs: number }>()
  let reading = false
  const read = async (worker: Worker): Promise<void> => {
    const before = calls(worker)
    if (before.ending || typeof worker.cpuUsage !== 'function') return
    const idle = !before.busy
    let cpuUs: number
    let heldBytes: number | undefined
    try {
      const [usage, heap] = await Promise.all([worker.cpuUsage(), memMB === undefined || !idle ? undefined : worker.getHeapStatistics()])
      cpuUs = usage.user + usage.system
      heldBytes = heap === undefined ? undefined : heap.used_heap_size + heap.external_memory
    } catch {
      return // it has exited
    }
    const after = calls(worker)
    if (after.ending) return
    const stillIdle = idle && !after.busy && after.reached === before.reached
    if (stillIdle && memMB !== undefined && heldBytes !== undefined && heldBytes > memMB * 1024 * 1024) {
      options.passed(worker, 'memory')
      return
    }
    if (after.reached === 0) {
      if (cpuUs > STARTUP_CPU_MS * 1000) options.passed(worker, 'cpu')
      return
    }
    const previous = last.get(worker)
    // The calls' busy time is read around the CPU time, before it and after it, and the interval
    // it is counted over (from the last read's before to this read's after) holds the CPU's: a
    // call that ran meanwhile is credited in full, however late this thread came back to the read
    // (under load it came back tens of ms late, and a worker spinning for its call was taken for
    // one spinning for none).
    last.set(worker, { cpuUs, callsBusyMs: before.callsBusyMs })
    // The first read after its first call: what its start spent up to that call is not measured against the limit.
    if (previous === undefined) return
    // Credit a call's busy time beyond its CPU (it waited) does not carry over to later reads.
    const noCallsUs = cpuUs - previous.cpuUs - (after.callsBusyMs - previous.callsBusyMs) * 1000
    if (noCallsUs > cpuLimitMs * 1000) options.passed(worker, 'cpu')
  }
  const timer = setInterval(() => {
    if (reading) return
    reading = true
    void Promise.all([...options.workers()].map(read)).finally(() => {
      reading = false
    })
  }, everyMs)
  timer.unref()
  return { stop: () => clearInterval(timer) }
}
