// What crosses the thread boundary between the front and a worker. Plain data only:
// errors do not survive the crossing (their name and fields are lost), so a worker
// always answers with a typed result and throws only for bugs.
import type { Posture } from '../config.js'
import type { FileRequest } from '../pool/tool-files.js'
import type { CallOutcome } from './error-codes.js'

/** Ajv standalone code (a CommonJS module exporting the validate function), by schema. */
export type ValidatorCode = { input?: string; output?: string; config?: string }

/** One tool version or check as a worker needs it: where its code is and what it declares. */
export type RunnableEntry = {
  key: string
  target: 'tool' | 'check'
  id: string
  version?: string
  modulePath: string
  absPath: string
  input?: object
  output?: object
  configSchema?: object
  posture: Posture
  memMB?: number
  cpuMs?: number
  networkNone: boolean
  pauses: boolean
  storesFiles: boolean
  readsFiles: boolean
  /** Compiled at boot in the front (validator-code.ts); absent before that. */
  validators?: ValidatorCode
}

/** What every worker of a group is started with (workerData). */
export type WorkerSetup = {
  groupKey: string
  entries: RunnableEntry[]
  abortChannel: string
  /** The group's cpuMs start table, when one of its entries has cpuMs. */
  cpuTable?: SharedArrayBuffer
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
  callId: number
  key: string
  /** The request message exactly as received: the worker parses it itself (cheaper than a clone). */
  body: string
  ids: CallIds
  /** strict posture only: the call's own folder, the one place it may write. */
  tmpDir?: string
  /** Which of ctx.files the call gets; the runtime's URL and token stay in the front. */
  files?: { store: boolean; read: boolean }
  /** Present when the front will wait for the answer in shared memory (answer-cell.ts). */
  answerCell?: SharedArrayBuffer
  /**
   * For a tool or check with cpuMs: the slot where the worker marks the call's start
   * (cpu-start-cell.ts), in `cpuTable` when given, else in the group's table (WorkerSetup).
   */
  cpuSlot?: number
  cpuTable?: SharedArrayBuffer
  /**
   * Warm workers only: where the front may put the worker's next call while this one runs
   * (mailbox.ts). The worker runs every call it takes from it, one after the other.
   */
  mailbox?: SharedArrayBuffer
  /**
   * Warm workers only: the run's secret, known to the front and the worker running it. The
   * worker's messages about the call carry it, so pack code on another worker of the process
   * can neither answer, abort nor ask files for a call it does not run.
   */
  nonce?: string
}

export type ProbeTask = { type: 'probe' }

export type WorkerTask = CallTask | ProbeTask

/** A call's answer, already serialized: the front sends `body` as it is. */
export type CallResult = {
  outcome: CallOutcome
  body: string
  /**
   * The worker must not serve another call: `failed` (context-isolated after a failure in
   * the handler), `memory` (its heap plus array buffers passed memMB), `crash` (a throw no
   * running call owned was held while it served: workers/stray-errors.ts).
   */
  retire?: 'failed' | 'memory' | 'crash'
}

export type ProbeResult = { problems: string[] }

/** What a warm worker's task returns: the answer of the last call of its run (mailbox.ts). */
export type RunEnd = { callId: number; result: CallResult }

/** Messages a worker posts on parentPort outside a task's return value. */
export type WorkerEvent =
  | { type: 'kindgi-ready'; problems: string[] }
  | { type: 'kindgi-result'; callId: number; nonce?: string; result: CallResult }
  /** The answer of a call followed by one the worker has taken from its mailbox. */
  | { type: 'kindgi-answer'; callId: number; nonce?: string; result: CallResult }
  | FileRequest

/** Messages the front sends to workers on the abort BroadcastChannel. */
export type AbortNotice = { callId: number; reason: 'deadline' | 'cancelled'; nonce?: string }
