// What crosses the thread boundary between a pack process (or a strict call's process) and
// the worker that runs pack code. Plain data only: errors do not survive the crossing (their
// name and fields are lost), so a worker always answers with a typed result and throws only
// for bugs.
import type { MessagePort } from 'node:worker_threads'
import type { CallResult } from './call-answers.js'
import type { RunnableEntry } from './runnable-entry.js'

/** What every worker of a group is started with (workerData). */
export type WorkerSetup = {
  groupKey: string
  entries: RunnableEntry[]
  /** Where abort notices come (a BroadcastChannel's name); taken out of workerData before pack code loads. */
  abortChannel: string
  /** Warm workers only: the pool's turn slots (workers/shared-memory/turn.ts); taken out of workerData before pack code loads. */
  turns?: SharedArrayBuffer
}

/** The ids a call's log lines carry. */
export type CallIds = {
  tenantId?: string
  runId?: string
  requestId?: string
  /** From a valid W3C traceparent: the caller's trace, and the call's own span in it (a child of the caller's). */
  traceId?: string
  spanId?: string
}

export type CallTask = {
  type: 'call'
  /** Unique for the life of the service (a safe integer, never reused). */
  callId: number
  key: string
  /** The request message exactly as received: the worker parses it itself (cheaper than a clone). */
  body: string
  ids: CallIds
  /** strict posture only: the call's own folder, the one place it may write. */
  tmpDir?: string
  /** Which of ctx.files the call gets; the runtime's URL and token stay in the front. */
  files?: { store: boolean; read: boolean }
  /**
   * Warm workers only: the call's secret, known to the pack process and the worker running
   * it. Its abort notice and file requests carry it, so pack code on another worker of the
   * process can neither abort nor ask files for a call it does not run.
   */
  nonce?: string
  /** Warm workers only: the call was stopped before it reached its worker, which runs nothing of it. */
  withdrawn?: boolean
  /** Warm workers only: the call's turn slot, which decides whether it runs there (workers/shared-memory/turn.ts). */
  turn?: number
}

export type ProbeTask = { type: 'probe' }

export type WorkerTask = CallTask | ProbeTask

export type ProbeResult = { problems: string[] }

/**
 * What a warm worker's task settles with: the call ran and this is its answer, or the worker
 * had retired (a call before this one said it must not serve again) and ran nothing.
 */
export type WarmReply = { kind: 'ran'; result: CallResult } | { kind: 'not-run' }

/** A handler's ctx.files request, posted on parentPort with a port for the reply. */
export type FileRequest =
  | { type: 'kindgi-files'; callId: number; nonce?: string; op: 'store'; bytes: ArrayBuffer; name: string; contentType: string; port: MessagePort }
  | { type: 'kindgi-files'; callId: number; nonce?: string; op: 'read'; artifactId: string; port: MessagePort }

export type FileValue = Record<string, unknown> | { bytes: ArrayBuffer } | { busy: true }
export type FileReply = { kind: 'ok'; value: FileValue } | { kind: 'error'; message: string }

/**
 * What a pack process broadcasts to its workers: fire a running call's abortSignal (deadline,
 * cancelled). A call still waiting its turn is taken back through its turn flag instead.
 */
export type AbortNotice = { callId: number; reason: 'deadline' | 'cancelled'; nonce?: string }
