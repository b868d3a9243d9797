// The wall behind "cpuMs counts the CPU a call hands to other threads" in a warm pack process
// whose tools have cpuMs. A warm call's cpuMs is its worker's busy time (CONTRACT), and the
// threads code hands work to are no worker's: a tool that started four async `crypto.pbkdf2`
// jobs on libuv's pool and answered at once kept both cores busy for minutes, and another call
// in that process passed its deadline (a red-team pass, stop 38); one that started
// `WebAssembly.compile` jobs did the same on V8's platform threads (stop 39). So the front,
// outside the process, reads the CPU time of those threads (proc-stat.ts) and charges it to the
// calls in flight there: each call brings its cpuMs of credit, which ends one read after the
// call does (what a call awaited is read at the next read, after it was freed: a tool that
// awaited a gzip of 4 MB, 100 ms of pool CPU, had its process killed every ten calls before
// that grace, a red-team pass), so work a call left running after its answer is soon paid for
// by no one. CPU past the credit, beyond a small allowance a read for the process's own use and
// the collector's, adds up over the last few reads; past a bound, the process is killed, whose
// end answers its calls: the kernel measures these threads for the process as a whole, so the
// process is the unit that can be stopped. A worker thread's start (its modules imported, their
// objects collected on V8's threads) is no call's either, and a pack whose cpuMs tool imported a
// large library (date-fns) failed its boot with no call at all (stop 40). So a worker thread
// that starts earns credit for V8's threads (where its modules are compiled and collected: no
// module load uses libuv's pool) as it spends CPU of its own in its first seconds, up to a bound,
// a few starts at a time: a module that is costly to load costs its worker about as much as V8's
// threads, while code that hands work to them (WebAssembly compiles) spends little of its own,
// and workers ended and started again earn no more.
import { helperThreads } from './proc-stat.js'

/** How often the threads' CPU time is read. */
const EVERY_MS = 500
/** CPU a read may show beyond the calls' credit: the process's own fs work, the collector's, and the kernel's 10 ms ticks. */
const ALLOWANCE_MS = 50
/** Reads whose CPU past the credit adds up. */
const WINDOW_READS = 4
/** CPU past the credit, over the last WINDOW_READS reads, before the process is killed. */
const OVERDRAFT_MS = 250
/** Credit a worker thread's start may earn, at most (its own CPU before its first call may be ten times that: idle-watch.ts). */
const START_CREDIT_MS = 500
/** Reads over which a started worker earns credit, and for which what it earned lasts: its modules load as it starts, within a second or two. */
const START_CREDIT_READS = 4
/** Starts that earn credit within START_WINDOW_READS reads, at most: workers ended and started again earn no more. */
const MAX_STARTS = 4
/** The reads (10 s) over which starts are counted against MAX_STARTS. */
const START_WINDOW_READS = 20

export type HelperCpuWatch = {
  /** A call with `cpuMs` is in flight in the process: its credit. */
  open(callId: number, cpuMs: number): void
  /** The call is done: what is left of its credit ends after the next read. */
  close(callId: number): void
  stop(): void
}

export type HelperCpuOptions = {
  everyMs?: number
  /** Reads the CPU time (ms) of libuv's pool, of V8's threads and of each worker thread by id, or undefined once the process is gone (tests give their own). */
  read?: (pid: number) => HelperThreads | undefined
}

type HelperThreads = { poolMs: number; v8Ms: number; workers: ReadonlyArray<{ tid: string; cpuMs: number }> }
type Credit = { left: number; closed: boolean }
/** A worker thread started lately: its CPU when last read, what it has earned, the reads left. */
type Start = { tid: string; cpuMs: number; earned: number; reads: number }

export function watchHelperCpu(pid: number, over: (why: string) => void, options: HelperCpuOptions = {}): HelperCpuWatch {
  const read = options.read ?? helperThreads
  const everyMs = options.everyMs ?? EVERY_MS
  /** Each call's credit left (ms), in the order they came; a closed call's goes at the next read. */
  const credit = new Map<number, Credit>()
  /** Worker threads started lately, earning, oldest first. */
  let starts: Start[] = []
  /** The reads at which the starts of the last START_WINDOW_READS reads were admitted to earn (at most MAX_STARTS). */
  let admitted: number[] = []
  let reads = 0
  /** What they have earned and not spent; gone with the last of them. */
  let startCredit = 0
  /** The worker threads seen at the last read. */
  let workers = new Set<string>()
  /** CPU past the credit at each of the last reads. */
  const owedAt: number[] = []
  let last = read(pid)
  if (last !== undefined) started(last.workers)
  const timer = setInterval(charge, everyMs)
  timer.unref()

  function stop(): void {
    clearInterval(timer)
  }

  function charge(): void {
    const now = read(pid)
    if (now === undefined) {
      stop()
      return
    }
    started(now.workers)
    if (last === undefined) {
      last = now
      return
    }
    const v8 = now.v8Ms - last.v8Ms
    let owed = now.poolMs - last.poolMs + v8 - ALLOWANCE_MS
    last = now
    for (const [callId, held] of credit) {
      const paid = Math.max(0, Math.min(held.left, owed))
      held.left -= paid
      owed -= paid
      if (held.closed) credit.delete(callId)
    }
    const paid = Math.max(0, Math.min(startCredit, owed, v8))
    startCredit -= paid
    owed -= paid
    owedAt.push(Math.max(0, owed))
    if (owedAt.length > WINDOW_READS) owedAt.shift()
    const overdraft = owedAt.reduce((sum, ms) => sum + ms, 0)
    if (overdraft <= OVERDRAFT_MS) return
    stop()
    over(`its libuv pool and V8's threads spent ${Math.round(overdraft)} ms of CPU in ${(WINDOW_READS * everyMs) / 1000} s past the cpuMs of its calls`)
  }

  /**
   * Worker threads not seen at the last read have started since: each earns credit as it spends
   * CPU of its own, for START_CREDIT_READS reads, while fewer than MAX_STARTS have within the
   * last START_WINDOW_READS, whatever they earned.
   */
  function started(now: HelperThreads['workers']): void {
    reads++
    admitted = admitted.filter((at) => reads - at < START_WINDOW_READS)
    const cpuOf = new Map(now.map((w) => [w.tid, w.cpuMs]))
    for (const start of starts) {
      const cpuMs = cpuOf.get(start.tid) ?? start.cpuMs
      const earned = Math.max(0, Math.min(cpuMs - start.cpuMs, START_CREDIT_MS - start.earned))
      start.earned += earned
      startCredit += earned
      start.cpuMs = cpuMs
      start.reads--
    }
    starts = starts.filter((start) => start.reads > 0)
    if (starts.length === 0) startCredit = 0
    for (const { tid, cpuMs } of now) {
      if (workers.has(tid) || admitted.length >= MAX_STARTS) continue
      admitted.push(reads)
      // What it spent before this read, its start's first part, counts too.
      const earned = Math.min(cpuMs, START_CREDIT_MS)
      starts.push({ tid, cpuMs, earned, reads: START_CREDIT_READS })
      startCredit += earned
    }
    workers = new Set(cpuOf.keys())
  }

  return {
    open: (callId, cpuMs) => void credit.set(callId, { left: cpuMs, closed: false }),
    close(callId) {
      const held = credit.get(callId)
      if (held !== undefined) held.closed = true
    },
    stop,
  }
}
