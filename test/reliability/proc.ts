// What the host process looks like from outside, read from /proc (Linux): its thread count
// (every worker is a thread) and its resident memory. No product hook needed.
import { readFileSync } from 'node:fs'

export type ProcSample = { threads: number; rssMB: number }

export function sample(pid: number): ProcSample {
  const status = readFileSync(`/proc/${pid}/status`, 'utf8')
  const field = (name: string) => Number(new RegExp(`^${name}:\\s+(\\d+)`, 'm').exec(status)?.[1] ?? NaN)
  return { threads: field('Threads'), rssMB: Math.round(field('VmRSS') / 1024) }
}

/**
 * Polls until the thread count is back to `threads` or below (idle Piscina workers retire
 * after 30 s), or `timeoutMs` passes; returns the last sample.
 */
export async function settle(pid: number, threads: number, timeoutMs: number): Promise<ProcSample & { waitedMs: number }> {
  const started = Date.now()
  for (;;) {
    const now = sample(pid)
    const waitedMs = Date.now() - started
    if (now.threads <= threads || waitedMs >= timeoutMs) return { ...now, waitedMs }
    await new Promise((r) => setTimeout(r, 500))
  }
}
