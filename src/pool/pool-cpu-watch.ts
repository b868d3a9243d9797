// The wall behind "cpuMs counts the CPU a call hands to libuv's thread pool" in a warm pack
// process whose tools have cpuMs. A warm call's cpuMs is its worker's busy time (CONTRACT), and
// the pool's threads are no worker's: a tool that started four async `crypto.pbkdf2` jobs and
// answered at once kept both cores busy for minutes, past every call's cpuMs, and another call
// in that process passed its deadline (a red-team pass, stop 38). So the front, outside the
// process, reads the CPU time of its `libuv-worker` threads (proc-stat.ts) and charges it to
// the calls in flight there: each call brings its cpuMs of credit, which ends with the call,
// so work a call left running after its answer is paid for by no one. Pool CPU past the credit
// of the calls in flight, beyond a small allowance a read for the process's own use, kills the
// process, whose end answers its calls: the kernel measures the pool as one, so the process
// is the unit that can be stopped.
import { libuvPoolCpuMs } from './proc-stat.js'

/** How often the pool's CPU time is read. */
const EVERY_MS = 500
/** Pool CPU a read may show beyond the calls' credit: the process's own fs work, and the kernel's 10 ms ticks. */
const ALLOWANCE_MS = 50
/** Pool CPU past the credit, in all, before the process is killed. */
const OVERDRAFT_MS = 250

export type PoolCpuWatch = {
  /** A call with `cpuMs` is in flight in the process: its credit. */
  open(callId: number, cpuMs: number): void
  /** The call is done: what is left of its credit ends with it. */
  close(callId: number): void
  stop(): void
}

export type PoolCpuOptions = {
  everyMs?: number
  /** Reads the pool's CPU time (ms) in all, or undefined once the process is gone (tests give their own). */
  read?: (pid: number) => number | undefined
}

export function watchPoolCpu(pid: number, over: (why: string) => void, options: PoolCpuOptions = {}): PoolCpuWatch {
  const read = options.read ?? libuvPoolCpuMs
  /** Each call in flight's credit left (ms), in the order they came. */
  const credit = new Map<number, number>()
  let last = read(pid)
  let overdraft = 0
  const timer = setInterval(charge, options.everyMs ?? EVERY_MS)
  timer.unref()

  function stop(): void {
    clearInterval(timer)
  }

  function charge(): void {
    const now = read(pid)
    if (now === undefined || last === undefined) {
      last ??= now
      if (now === undefined) stop()
      return
    }
    let owed = now - last - ALLOWANCE_MS
    last = now
    for (const [callId, left] of credit) {
      if (owed <= 0) break
      const paid = Math.min(left, owed)
      credit.set(callId, left - paid)
      owed -= paid
    }
    if (owed <= 0) return
    overdraft += owed
    if (overdraft <= OVERDRAFT_MS) return
    stop()
    over(`its libuv thread pool spent ${Math.round(overdraft)} ms of CPU past the cpuMs of the calls in flight`)
  }

  return {
    open: (callId, cpuMs) => void credit.set(callId, cpuMs),
    close: (callId) => void credit.delete(callId),
    stop,
  }
}
