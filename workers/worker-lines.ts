// Which calls are on which warm worker, in the order the worker runs them: the first is the one
// it runs, the rest wait their turn on it (Piscina's concurrentTasksPerWorker lets a task reach a
// busy worker; workers/pooled.ts runs its tasks one after the other). A call waits behind
// another only where warm-pool.ts puts it; this is the bookkeeping, with no policy.

export type WorkerLines<C> = {
  /** The call reached this worker (the balancer gave it): true when it is the one the worker runs now. */
  add(threadId: number, call: C): boolean
  /** The call is off its worker (answered, not run, or gone with the worker); returns the call that runs next, when `call` was running. */
  remove(threadId: number, call: C): C | undefined
  /** `by` takes `call`'s place in its worker's line (a stand-in for a call taken back from it). */
  replace(threadId: number, call: C, by: C): void
  length(threadId: number): number
  /** The call the worker runs now (first in its line), if any. */
  first(threadId: number): C | undefined
  /** The worker, of those whose line `fits`, with the fewest calls in line. */
  shortest(fits: (running: C, length: number) => boolean): number | undefined
}

export function createWorkerLines<C>(): WorkerLines<C> {
  const lines = new Map<number, C[]>()
  return {
    add(threadId, call) {
      let line = lines.get(threadId)
      if (line === undefined) {
        line = []
        lines.set(threadId, line)
      }
      line.push(call)
      return line.length === 1
    },
    remove(threadId, call) {
      const line = lines.get(threadId)
      const at = line?.indexOf(call) ?? -1
      if (line === undefined || at < 0) return undefined
      line.splice(at, 1)
      if (line.length === 0) lines.delete(threadId)
      return at === 0 ? line[0] : undefined
    },
    replace(threadId, call, by) {
      const line = lines.get(threadId)
      const at = line?.indexOf(call) ?? -1
      if (line !== undefined && at >= 0) line[at] = by
    },
    length: (threadId) => lines.get(threadId)?.length ?? 0,
    first: (threadId) => lines.get(threadId)?.[0],
    shortest(fits) {
      let best: number | undefined
      let bestLength = Number.POSITIVE_INFINITY
      for (const [threadId, line] of lines) {
        const running = line[0]
        if (running === undefined || line.length >= bestLength || !fits(running, line.length)) continue
        best = threadId
        bestLength = line.length
      }
      return best
    },
  }
}
