// The wall behind "nothing a limited call started runs on after its answer": a pack process
// whose tools all have cpuMs or memMB may run no thread but Node's own and its pool's workers.
// A nested Worker escapes both limits (its CPU is not its worker's, its heap not its heap), so
// the front, outside the process, counts the process's threads in /proc/<pid>/status against
// Node's own (read once, before any worker existed) plus the workers the pool says it has. A
// count that stays over for a few reads in a row is a thread pack code started: the front
// kills the process, whose end answers its calls. The pool's word is authenticated with a
// secret pack code never saw, and a count that does not come in time counts against it.
import { readFileSync } from 'node:fs'

/** Reads in a row a count must stay over before the process is killed (a worker Piscina ends can outlive its count for a moment). */
const STRIKES = 3
const RECHECK_MS = 20
const EVERY_MS = 500
/** How long the pool may take to say its count before the process counts as hiding one. */
const ANSWER_MS = 5_000

export type ThreadWatch = {
  /**
   * The process says Node's own threads are up and none of its pool's: read them now. Only the
   * first time: every thread of the process can write its channel, and a nested Worker read as
   * Node's own was never counted again (a red-team pass, stop 35). False when read before.
   */
  readBase(): boolean
  /** Counts now (after a limited call ended), unless a count is under way. */
  check(): void
  /** The pool's count of its live worker threads, as the process answered. */
  counted(live: number): void
  stop(): void
}

/** The number of threads of `pid`, or undefined once it is gone. */
export function threadsOf(pid: number): number | undefined {
  try {
    const match = /^Threads:\s+(\d+)$/m.exec(readFileSync(`/proc/${pid}/status`, 'latin1'))
    return match === null ? undefined : Number(match[1])
  } catch {
    return undefined
  }
}

export function watchThreads(pid: number, ask: () => void, tooMany: (why: string) => void): ThreadWatch {
  let base: number | undefined
  let baseRead = false
  let asking = false
  let strikes = 0
  let stopped = false
  let answerTimer: NodeJS.Timeout | undefined
  const every = setInterval(() => check(), EVERY_MS)
  every.unref()

  function stop(): void {
    stopped = true
    clearInterval(every)
    clearTimeout(answerTimer)
  }

  function send(): void {
    asking = true
    ask()
    clearTimeout(answerTimer)
    answerTimer = setTimeout(() => {
      if (stopped || !asking) return
      stop()
      tooMany(`it did not say its thread count within ${ANSWER_MS} ms`)
    }, ANSWER_MS)
    answerTimer.unref()
  }

  function check(): void {
    if (stopped || asking || base === undefined) return
    send()
  }

  return {
    readBase() {
      if (baseRead) return false
      baseRead = true
      base = threadsOf(pid)
      return true
    },
    check,
    counted(live) {
      if (stopped || !asking || base === undefined) return
      clearTimeout(answerTimer)
      const now = threadsOf(pid)
      if (now === undefined) return stop()
      const extra = now - base - live
      if (extra <= 0) {
        strikes = 0
        asking = false
        return
      }
      if (++strikes < STRIKES) {
        setTimeout(() => !stopped && send(), RECHECK_MS).unref()
        return
      }
      stop()
      tooMany(`${extra} thread(s) beyond Node's own and its pool's workers`)
    },
    stop,
  }
}
