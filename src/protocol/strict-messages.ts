// What crosses the channel between the front and a strict call's own process (issue 16), one
// JSON message a line through the spawner: bytes (tool files) as base64, as to a pack process.
// The process holds one call at most, so nothing in these messages needs to say which call a
// reply belongs to: the front knows it from the process. Ids inside (a file request's `req`)
// only pair a request with its reply within that one process. What a process is sent does not
// grow with the pack: its setup says only what goes in before pack code, and its call carries
// the one entry it runs.
import type { RunnableEntry, RunnerTraits } from './runnable-entry.js'
import type { CallTask } from './worker-messages.js'
import type { CallResult } from './call-answers.js'
import type { FileReplyMessage } from './pack-messages.js'

export type { FileReplyMessage }

/**
 * Rung after a message sent while the call runs (an abort): until then the process reads its
 * channel only when it expects something (workers/fd-channel.ts), and this says something came.
 */
export const DOORBELL = 'SIGUSR2'

/** Front → strict process. */
export type ToStrict =
  /**
   * First message: what goes in before pack code, for every entry of its group (guards and
   * loaders; no pack code runs yet), and with --watch the pack's files as its boot read them
   * (absolute path → text), loaded instead of the disk's.
   */
  | { type: 'setup'; traits: RunnerTraits; sources?: Readonly<Record<string, string>> }
  /** Import these entries' modules and report what failed (the boot probe). */
  | { type: 'probe'; entries: RunnableEntry[] }
  /** The one call, and the entry it runs: import its module, run it, answer. */
  | { type: 'call'; task: CallTask; entry: RunnableEntry }
  | { type: 'abort'; reason: 'deadline' | 'cancelled' }
  | { type: 'file-reply'; req: number; reply: FileReplyMessage }

/**
 * The types of FromStrict: the spawner kills a process that sends another (spawner-messages.ts
 * `types`). A record of every type, so that a type added to FromStrict and not here fails to
 * compile rather than every strict call that sends it.
 */
const FROM_STRICT: Readonly<Record<FromStrict['type'], true>> = { 'spare-ready': true, probed: true, result: true, files: true }
export const FROM_STRICT_TYPES = Object.keys(FROM_STRICT) as ReadonlyArray<FromStrict['type']>

/** Strict process → front. */
export type FromStrict =
  | { type: 'spare-ready' }
  | { type: 'probed'; problems: string[] }
  | { type: 'result'; result: CallResult }
  | { type: 'files'; req: number; op: 'store'; bytes64: string; name: string; contentType: string }
  | { type: 'files'; req: number; op: 'read'; artifactId: string }
