// A limited tool's code can go on running on its worker after its call has answered: a
// replaced Atomics.wait runs inside Piscina's park loop between tasks, and microtasks queued
// as it answered run after the end-of-call memory check (a red-team pass, stop 38). There no
// call's cpuMs or memMB counts, and such code burned most of a core, or held a gigabyte, for
// as long as it liked. So a pool with limited tools looks at each worker from outside it while
// it runs no call: its own CPU time (worker.cpuUsage(), Node >= 24.6, which answers while the
// thread spins) and, for memMB, its heap and external memory as the call's watch counts them
// (worker.getHeapStatistics(), which answers while it is parked). A worker that spends more
// than `cpuLimitMs` of CPU between two reads `everyMs` apart, no call having reached it in
// between, or holds more than memMB, is handed to `passed` to be ended. Before its first call
// a worker starts (Node's own start, the pack's modules): it may spend up to STARTUP_CPU_MS in
// all then, which module top-level code that replaced Atomics.wait passes within seconds.
import type { Worker } from 'node:worker_threads'

/** How often idle workers are read. */
export const IDLE_CHECK_MS = 500
/** CPU an idle worker may spend between two reads (a parked worker spends next to none). */
export const IDLE_CPU_MS = 100
/** CPU a worker may spend in all before its first call. */
export const STARTUP_CPU_MS = 5_000

/** A worker as the pool sees it: whether calls are on it, and how many have reached it so far. */
export type WorkerCalls = { busy: boolean; reached: number }

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
  /** Each idle worker's CPU time (µs) at the last read, and the calls it had reached then. */
  const last = new WeakMap<Worker, { cpuUs: number; reached: number }>()
  let reading = false
  const read = async (worker: Worker): Promise<void> => {
    const before = calls(worker)
    if (before.busy || typeof worker.cpuUsage !== 'function') return
    let cpuUs: number
    let heldBytes: number | undefined
    try {
      const [usage, heap] = await Promise.all([worker.cpuUsage(), memMB === undefined ? undefined : worker.getHeapStatistics()])
      cpuUs = usage.user + usage.system
      heldBytes = heap === undefined ? undefined : heap.used_heap_size + heap.external_memory
    } catch {
      return // it has exited
    }
    const after = calls(worker)
    const previous = last.get(worker)
    if (after.busy || after.reached !== before.reached) {
      last.delete(worker)
      return
    }
    if (memMB !== undefined && heldBytes !== undefined && heldBytes > memMB * 1024 * 1024) {
      options.passed(worker, 'memory')
      return
    }
    if (after.reached === 0) {
      if (cpuUs > STARTUP_CPU_MS * 1000) options.passed(worker, 'cpu')
      return
    }
    last.set(worker, { cpuUs, reached: after.reached })
    if (previous !== undefined && previous.reached === after.reached && cpuUs - previous.cpuUs > cpuLimitMs * 1000) options.passed(worker, 'cpu')
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
