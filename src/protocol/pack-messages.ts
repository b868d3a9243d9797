// What crosses the channel (frame-channel.ts) between the front and a warm group's pack process (issue 16):
// the front never runs pack code, so the Piscina pool of a `none` or `context-isolated` group
// lives in a process of its own. Calls, stops and file replies go one way, answers, frees and
// file requests the other, batched: whatever was queued in one turn of the event loop goes as
// one message (an array), since a message per call costs the front more than the call.
// Every item names its call; the front acts on an item only for a call pending in the process
// that sent it (a pack process is pack code: it may say anything).
import type { FileValue } from './worker-messages.js'
import type { GroupAnswer, ReplaceReason, StopReason } from './call-answers.js'
import type { CallTask } from './worker-messages.js'
import type { RunnableEntry } from './runnable-entry.js'

/** A file request's reply as it crosses: bytes read, if any, as base64 in `bytes64`. */
export type FileReplyMessage = { kind: 'ok'; value: Exclude<FileValue, { bytes: ArrayBuffer }> | { bytes64: string } } | { kind: 'error'; message: string }

/** What a pack process needs to start its group: the plan and the limits of its pool. */
export type PackSetup = {
  key: string
  entries: RunnableEntry[]
  memMB: number | undefined
  /** Calls that may be on this process's workers at once (the service's concurrency cap). */
  maxThreads: number
  minThreads: number
  /** Calls that may compute on its worker threads at once (KINDGI_PACK_WORKER_THREADS). */
  workerThreads: number
  /**
   * Every tool of the group has limits: the front counts the process's threads from outside,
   * so before its pool starts the process says `threads-base` and waits for `threads-counted`.
   */
  countThreads: boolean
  /** Known to the process's own code only (given before any pack code loads): the key that seals its every line (line-seal.ts). */
  secret: string
}

export type ToPackItem =
  | { type: 'call'; task: CallTask }
  | { type: 'stop'; callId: number; reason: StopReason }
  | { type: 'file-reply'; req: number; reply: FileReplyMessage }
  /** Say how many worker threads the pool has made and not yet seen exit. */
  | { type: 'count-threads' }

/** Front → pack process. */
export type ToPack =
  /** First message: start the group's pool (its workers import the modules). */
  | { type: 'setup'; setup: PackSetup }
  /** Report what failed to load in a worker (the boot probe). */
  | { type: 'probe' }
  | { type: 'batch'; items: ToPackItem[] }
  /** Close the pool and exit. */
  | { type: 'close' }
  /** The front has read the process's threads before its pool: it may start it now. */
  | { type: 'threads-counted' }

export type FromPackItem =
  /** The call's answer, or why it has none. */
  | { type: 'answer'; callId: number; answer: GroupAnswer }
  /** The worker can take another call, or is gone: the front's slot is free. */
  | { type: 'freed'; callId: number }
  | { type: 'replaced'; reason: ReplaceReason; id: string | undefined }
  | { type: 'files'; callId: number; req: number; op: 'store'; bytes64: string; name: string; contentType: string }
  | { type: 'files'; callId: number; req: number; op: 'read'; artifactId: string }
  /** Live worker threads of the process, sent when it changes (the workers gauge). */
  | { type: 'workers'; count: number }
  /** The answer to count-threads: the pool's worker threads that have not exited. */
  | { type: 'threads'; live: number }
  /** Its workers keep being ended for CPU no call accounts for (idle-watch.ts), `times` within a minute: hold the process back. */
  | { type: 'workers-burnt'; times: number }

/** Pack process → front. */
export type FromPack =
  | { type: 'probed'; problems: string[] }
  /** The probe's worker died while loading. */
  | { type: 'probe-failed'; message: string }
  | { type: 'batch'; items: FromPackItem[] }
  /** Node and its own threads are up, and no worker yet: the front reads the thread count now. */
  | { type: 'threads-base' }
