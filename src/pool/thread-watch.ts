// The wall behind "nothing a limited call started runs on after its answer": a pack process
// whose tools all have cpuMs or memMB may run no thread but Node's own and its pool's workers.
// A nested Worker escapes both limits (its CPU is not its worker's, its heap not its heap), so
// the front, outside the process, counts the process's threads in /proc/<pid>/status against
// Node's own (read once, before any worker existed) plus the workers the pool says it has. A
// count that stays over for a few reads in a row is a thread pack code started: the front
// kills the process, whose end answers its calls. The pool's word is authenticated with a
// secret pack code never saw, and a count that does not come in time counts against it.
// With memMB, the same reads weigh the process's resident memory against what its workers may
// hold: Node's own (read with the base) and, a worker, memMB of heap and Buffers as the call's
// watch counts them plus what V8 keeps beside them. A SharedArrayBuffer, or zlib's native
// memory, is no worker's heap or external memory: a memMB 64 tool held 1.6 GB of them (a
// red-team pass, stop 38). The process is the unit the kernel measures, so one whose memory
// stays over is killed, with the calls it runs: the hostile case, which no call of a tool that
// keeps to memMB reaches.
import { threadsAndResident } from './proc-stat.js'

/** Reads in a row a count must stay over before the process is killed (a worker Piscina ends can outlive its count for a moment). */
const STRIKES = 3
const RECHECK_MS = 20
const EVERY_MS = 500
/** How long the pool may take to say its count before the process counts as hiding one. */
const ANSWER_MS = 5_000
/** What a worker may hold beside memMB (V8's young generation, code, the isolate, the pack's modules). */
export const WORKER_OVERHEAD_MB = 96
/** What the process may hold beside Node's own start and its workers (libuv, channel buffers, stdio). */
export const PROCESS_OVERHEAD_MB = 64
const MB = 1024 * 1024

/** Why the process is killed: a thread beyond its own, or memory beyond memMB. */
export type WatchTrip = 'threads' | 'memory'

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
  return threadsAndResident(pid)?.threads
}

export function watchThreads(pid: number, ask: () => void, tooMany: (why: string, trip: WatchTrip) => void, memMB?: number): ThreadWatch {
  let base: number | undefined
  let residentBase = 0
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
      tooMany(`it did not say its thread count within ${ANSWER_MS} ms`, 'threads')
    }, ANSWER_MS)
    answerTimer.unref()
  }

  function check(): void {
    if (stopped || asking || base === undefined) return
    send()
  }

  /** Why the process, holding `resident` bytes, holds more than `live` workers may under memMB, if it does. */
  function overMemory(live: number, resident: number | undefined): string | undefined {
    if (memMB === undefined) return undefined
    const allowed = residentBase + (PROCESS_OVERHEAD_MB + live * (memMB + WORKER_OVERHEAD_MB)) * MB
    if (resident === undefined || resident <= allowed) return undefined
    return `it held ${Math.round(resident / MB)} MB, past the ${Math.round(allowed / MB)} MB its ${live} worker(s) may hold under memMB ${memMB}`
  }

  return {
    readBase() {
      if (baseRead) return false
      baseRead = true
      const status = threadsAndResident(pid)
      base = status?.threads
      residentBase = status?.residentBytes ?? 0
      return true
    },
    check,
    counted(live) {
      if (stopped || !asking || base === undefined) return
      clearTimeout(answerTimer)
      const status = threadsAndResident(pid)
      if (status === undefined) return stop()
      const extra = status.threads - base - live
      const over = extra > 0 ? undefined : overMemory(live, status.residentBytes)
      if (extra <= 0 && over === undefined) {
        strikes = 0
        asking = false
        return
      }
      if (++strikes < STRIKES) {
        setTimeout(() => !stopped && send(), RECHECK_MS).unref()
        return
      }
      stop()
      if (extra > 0) tooMany(`${extra} thread(s) beyond Node's own and its pool's workers`, 'threads')
      else tooMany(over as string, 'memory')
    },
    stop,
  }
}
