// A pack process's CPU time (its own, and its helper threads'), data segment, threads and resident
// memory, read by the front from /proc: measured from outside the process, so pack code cannot
// rewrite them (issue 16, cpuMs and memMB).
import { readdirSync, readFileSync } from 'node:fs'

/** Kernel clock ticks a second (USER_HZ): 100 on every Linux build Node supports. */
const TICKS_PER_SECOND = 100

/** User + system CPU time in clock ticks of a `/proc/.../stat` text, and its command name. */
function statTicks(stat: string): { name: string; ticks: number } | undefined {
  // The command name (field 2) may hold spaces and parentheses: count fields after its last ')'.
  const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ')
  const ticks = Number(fields[11]) + Number(fields[12])
  return Number.isFinite(ticks) ? { name: stat.slice(stat.indexOf('(') + 1, stat.lastIndexOf(')')), ticks } : undefined
}

/** A /proc file's text, or undefined (its process or thread is gone, or this is not Linux). */
function readProc(path: string): string | undefined {
  try {
    return readFileSync(path, 'latin1')
  } catch {
    return undefined
  }
}

/** Whether `pid` has ended: gone from /proc, or dead and not yet reaped (a zombie, whose parent has not waited for it). */
export function hasEnded(pid: number): boolean {
  const stat = readProc(`/proc/${pid}/stat`)
  if (stat === undefined) return true
  const state = stat.charAt(stat.lastIndexOf(')') + 2)
  return state === 'Z' || state === 'X'
}

/** User + system CPU time of `pid` in milliseconds, or undefined when it cannot be read (gone, not Linux). */
export function cpuTimeMs(pid: number): number | undefined {
  const stat = readProc(`/proc/${pid}/stat`)
  const read = stat === undefined ? undefined : statTicks(stat)
  return read === undefined ? undefined : (read.ticks * 1000) / TICKS_PER_SECOND
}

/** `pid`'s threads and VmRSS in bytes (what it holds in memory: heaps, Buffers, SharedArrayBuffers, native memory alike), from one read, or undefined once it is gone. */
export function threadsAndResident(pid: number): { threads: number; residentBytes: number | undefined } | undefined {
  const status = readProc(`/proc/${pid}/status`)
  const threads = statusField(status, 'Threads')
  if (threads === undefined) return undefined
  const resident = statusField(status, 'VmRSS')
  return { threads, residentBytes: resident === undefined ? undefined : resident * 1024 }
}

/** The fields read of `/proc/<pid>/status`, compiled once (a count reads them after every limited call). */
const STATUS_FIELDS = { Threads: /^Threads:\s+(\d+)$/m, VmRSS: /^VmRSS:\s+(\d+) kB$/m, VmData: /^VmData:\s+(\d+) kB$/m }

/** A number field of a `/proc/<pid>/status` text (`kB` fields in kB), or undefined. */
function statusField(status: string | undefined, field: keyof typeof STATUS_FIELDS): number | undefined {
  const match = status === undefined ? null : STATUS_FIELDS[field].exec(status)
  return match === null ? undefined : Number(match[1])
}

/** VmData of `pid` in bytes (what RLIMIT_DATA counts), or undefined. */
export function dataBytes(pid: number): number | undefined {
  const data = statusField(readProc(`/proc/${pid}/status`), 'VmData')
  return data === undefined ? undefined : data * 1024
}

/**
 * The threads that run what code hands off its own thread: libuv's pool (crypto, zlib, fs and
 * dns work), and V8's platform workers (WebAssembly and JavaScript compiles, the collector's
 * concurrent work; Node 26 prefixes their name with `node-`).
 */
const POOL_THREAD = 'libuv-worker'
const V8_THREADS: ReadonlySet<string> = new Set(['V8Worker', 'node-V8Worker'])
/** Node's name for a worker thread's (Piscina's workers, in a pack process). */
const WORKER_THREAD = 'WorkerThread'

/**
 * User + system CPU time, in milliseconds, of `pid`'s helper threads: libuv's pool and V8's
 * platform threads apart; and each of its worker threads by id, with its own; or undefined once
 * it is gone. A thread's name is its own to change only from native code in that thread.
 */
export function helperThreads(pid: number): { poolMs: number; v8Ms: number; workers: Array<{ tid: string; cpuMs: number }> } | undefined {
  let tasks: string[]
  try {
    tasks = readdirSync(`/proc/${pid}/task`)
  } catch {
    return undefined
  }
  let pool = 0
  let v8 = 0
  const workers: Array<{ tid: string; cpuMs: number }> = []
  for (const task of tasks) {
    const stat = readProc(`/proc/${pid}/task/${task}/stat`) // undefined: it has ended
    const read = stat === undefined ? undefined : statTicks(stat)
    if (read === undefined) continue
    if (read.name === POOL_THREAD) pool += read.ticks
    else if (V8_THREADS.has(read.name)) v8 += read.ticks
    else if (read.name === WORKER_THREAD) workers.push({ tid: task, cpuMs: (read.ticks * 1000) / TICKS_PER_SECOND })
  }
  return { poolMs: (pool * 1000) / TICKS_PER_SECOND, v8Ms: (v8 * 1000) / TICKS_PER_SECOND, workers }
}
