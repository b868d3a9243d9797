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
// large library (date-fns) failed its boot with no call at all (stop 40): each worker thread the
// read sees for the first time brings credit for its start, a few at a time, so workers ended
// and started again do not earn more; it pays for V8's threads only (where modules are compiled
// and collected: no module load uses libuv's pool), or a process killed and started again would
// bring pool work fresh credit.
import { helperThreads } from './proc-stat.js'

/** How often the threads' CPU time is read. */
const EVERY_MS = 500
/** CPU a read may show beyond the calls' credit: the process's own fs work, the collector's, and the kernel's 10 ms ticks. */
const ALLOWANCE_MS = 50
/** Reads whose CPU past the credit adds up. */
const WINDOW_READS = 4
/** CPU past the credit, over the last WINDOW_READS reads, before the process is killed. */
const OVERDRAFT_MS = 250
/** Credit a worker thread's start brings (its own CPU before its first call may be five times that: idle-watch.ts). */
const START_CREDIT_MS = 1_000
/** Reads a start's credit lasts: a worker's modules load within seconds. */
const START_CREDIT_READS = 10
/** Starts that bring credit within START_CREDIT_READS reads, at most. */
const MAX_STARTS = 4

export type HelperCpuWatch = {
  /** A call with `cpuMs` is in flight in the process: its credit. */
  open(callId: number, cpuMs: number): void
  /** The call is done: what is left of its credit ends after the next read. */
  close(callId: number): void
  stop(): void
}

export type HelperCpuOptions = {
  everyMs?: number
  /** Reads the CPU time (ms) of libuv's pool and of V8's threads, and the ids of the worker threads, or undefined once the process is gone (tests give their own). */
  read?: (pid: number) => HelperThreads | undefined
}

type HelperThreads = { poolMs: number; v8Ms: number; workers: readonly string[] }
type Credit = { left: number; closed: boolean }
type StartCredit = { left: number; reads: number }

export function watchHelperCpu(pid: number, over: (why: string) => void, options: HelperCpuOptions = {}): HelperCpuWatch {
  const read = options.read ?? helperThreads
  const everyMs = options.everyMs ?? EVERY_MS
  /** Each call's credit left (ms), in the order they came; a closed call's goes at the next read. */
  const credit = new Map<number, Credit>()
  /** The credit of worker threads' starts, oldest first. */
  let starts: StartCredit[] = []
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
    let v8Owed = Math.min(owed, v8)
    for (const start of starts) {
      const paid = Math.max(0, Math.min(start.left, v8Owed))
      start.left -= paid
      v8Owed -= paid
      owed -= paid
      start.reads--
    }
    // A start counts against MAX_STARTS for as long as its credit would have lasted, spent or not.
    starts = starts.filter((start) => start.reads > 0)
    owedAt.push(Math.max(0, owed))
    if (owedAt.length > WINDOW_READS) owedAt.shift()
    const overdraft = owedAt.reduce((sum, ms) => sum + ms, 0)
    if (overdraft <= OVERDRAFT_MS) return
    stop()
    over(`its libuv pool and V8's threads spent ${Math.round(overdraft)} ms of CPU in ${(WINDOW_READS * everyMs) / 1000} s past the cpuMs of its calls`)
  }

  /** Worker threads not seen at the last read have started since: each brings its credit, while fewer than MAX_STARTS have lately. */
  function started(now: readonly string[]): void {
    for (const tid of now) if (!workers.has(tid) && starts.length < MAX_STARTS) starts.push({ left: START_CREDIT_MS, reads: START_CREDIT_READS })
    workers = new Set(now)
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
