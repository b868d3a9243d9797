// The one interface the dispatcher sees for a set of workers that run the same entries
// under the same posture and limits, whatever keeps them (a pack process, or strict spares).
import type { CallResult, GroupAnswer, ReplaceReason, StopReason } from '../protocol/call-answers.js'
import { ERROR_CODES } from '../protocol/error-codes.js'
import type { RunnableEntry } from '../protocol/runnable-entry.js'
import type { CallTask } from '../protocol/worker-messages.js'
import type { FileHandler } from './tool-files.js'
import type { Holder, ThreadBudget } from './thread-budget.js'

export type RunningCall = {
  /** The worker's answer, or why it has none; never rejects. */
  answer: Promise<GroupAnswer>
  /** Resolves once the worker can take another call, is gone, or can run nothing more (killed): only then is the slot free. */
  freed: Promise<void>
  /** Fires the call's abortSignal and terminates the worker if it has not settled after the grace. */
  stop(reason: StopReason): void
  /**
   * CPU time the call's own process has used, for cpuMs, read by the front (strict). Absent where
   * the group enforces cpuMs itself (a pack process reads its workers' busy time).
   */
  busyMs?: () => number | undefined
}

export type WorkerGroup = {
  key: string
  entries: RunnableEntry[]
  /** Starts the group's first worker and reports what failed to load in it. */
  probe(): Promise<string[]>
  run(task: CallTask): RunningCall
  workerCount(): number
  /**
   * What holds calls, for the thread budget's utilization samples: a holder without a call
   * must not look idle (Piscina's park in Atomics.wait counts as busy; strict spares are left out).
   */
  holders(): Holder[]
  close(): Promise<void>
}

export type GroupOptions = {
  key: string
  entries: RunnableEntry[]
  env: Record<string, string>
  memMB: number | undefined
  maxThreads: number
  abortChannel: string
  onReplaced(reason: ReplaceReason, id: string | undefined): void
  /** Shared by every group: how many calls may be on worker threads at once. */
  budget: ThreadBudget
  /** A handler asked for ctx.files.store/read: the front makes the request. */
  onFileRequest: FileHandler
}

/** What a worker-replaced line names for an entry: its key without the target ("echo@1.0.0"). */
export function replacedId(key: string): string {
  return key.slice(key.indexOf(':') + 1)
}

/** The reason a worker retired by a call is replaced. */
export function retireReason(retire: 'failed' | 'memory' | 'crash'): ReplaceReason {
  return retire === 'memory' ? 'memory' : retire === 'crash' ? 'crash' : 'context-isolated'
}

/**
 * What a worker's answer may say: ok or a protocol error code. Never `host-failed` (the front's
 * word for a call nothing of which ran, which callers may send again) nor any other string (the
 * logs and the metrics' labels take it as it is).
 */
const WORKER_OUTCOMES: ReadonlySet<string> = new Set<string>(['ok', ...ERROR_CODES])

/**
 * An answer as it came from a pack process, checked for the shape the host's own code sends:
 * pack code can write on that process's channel too, and what reaches the front must never be
 * anything but strings where the wire, the logs and the metrics expect them. What those strings
 * say is checked against the call's entry once the front holds the call (answer-head.ts).
 */
export function checkedAnswer(given: unknown): GroupAnswer {
  const answer = given as { kind?: unknown; result?: { outcome?: unknown; body?: unknown; retire?: unknown }; reason?: unknown; detail?: unknown } | null
  if (
    answer?.kind === 'result' &&
    typeof answer.result?.body === 'string' &&
    typeof answer.result.outcome === 'string' &&
    WORKER_OUTCOMES.has(answer.result.outcome)
  ) {
    const { outcome, body, retire } = answer.result
    return retire === 'failed' || retire === 'memory' || retire === 'crash'
      ? { kind: 'result', result: { outcome: outcome as CallResult['outcome'], body, retire } }
      : { kind: 'result', result: { outcome: outcome as CallResult['outcome'], body } }
  }
  if (answer?.kind === 'shutdown') return { kind: 'shutdown' }
  if (answer?.kind === 'died' && (answer.reason === 'crash' || answer.reason === 'memory') && typeof answer.detail === 'string') {
    return { kind: 'died', reason: answer.reason, detail: answer.detail }
  }
  return { kind: 'died', reason: 'crash', detail: 'its process answered with a message the host does not send' }
}

/**
 * How long a handler may take to settle after its abortSignal fired before its worker is
 * terminated. The abort crosses to the worker's thread, which a loaded machine may not run for
 * a while: at 100 ms a handler's abort listener once never ran under a CI run's load. The
 * caller has its answer at the deadline either way; only the worker's slot waits this long.
 */
export const ABORT_GRACE_MS = 250

/**
 * Warm workers' flags: their pack process's own, and no ExperimentalWarning (Node's TypeScript
 * stripping API prints one per worker).
 */
export const WORKER_EXEC_ARGV: string[] = [...process.execArgv, '--disable-warning=ExperimentalWarning']

export function resourceLimits(memMB: number | undefined): { maxOldGenerationSizeMb: number; maxYoungGenerationSizeMb: number } | undefined {
  if (memMB === undefined) return undefined
  return { maxOldGenerationSizeMb: memMB, maxYoungGenerationSizeMb: Math.max(1, Math.min(16, Math.floor(memMB / 4))) }
}

export function describeDeath(err: unknown): { reason: 'crash' | 'memory'; detail: string } {
  const e = err as { code?: unknown; message?: unknown } | null
  if (e?.code === 'ERR_WORKER_OUT_OF_MEMORY') return { reason: 'memory', detail: 'out of memory' }
  const message = typeof e?.message === 'string' ? e.message : String(err)
  const exit = /worker exited with code: (-?\d+)/.exec(message)
  if (exit !== null) return { reason: 'crash', detail: `code ${exit[1]}` }
  return { reason: 'crash', detail: message }
}
