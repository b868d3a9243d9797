// A pack process's CPU time and data segment, read by the front from /proc: measured from
// outside the process, so pack code cannot rewrite them (issue 16, cpuMs and memMB).
import { readFileSync } from 'node:fs'

/** Kernel clock ticks a second (USER_HZ): 100 on every Linux build Node supports. */
const TICKS_PER_SECOND = 100

/** User + system CPU time of `pid` in milliseconds, or undefined when it cannot be read (gone, not Linux). */
export function cpuTimeMs(pid: number): number | undefined {
  let stat: string
  try {
    stat = readFileSync(`/proc/${pid}/stat`, 'latin1')
  } catch {
    return undefined
  }
  // The command name (field 2) may hold spaces and parentheses: count fields after its last ')'.
  const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ')
  const utime = Number(fields[11])
  const stime = Number(fields[12])
  if (!Number.isFinite(utime) || !Number.isFinite(stime)) return undefined
  return ((utime + stime) * 1000) / TICKS_PER_SECOND
}

/** VmData of `pid` in bytes (what RLIMIT_DATA counts), or undefined. */
export function dataBytes(pid: number): number | undefined {
  try {
    const match = /^VmData:\s+(\d+) kB$/m.exec(readFileSync(`/proc/${pid}/status`, 'latin1'))
    return match === null ? undefined : Number(match[1]) * 1024
  } catch {
    return undefined
  }
}
