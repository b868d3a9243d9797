// How a call ends, as every layer below the front reports it: an answer its worker gave, or
// why it has none. The dispatcher turns these into protocol messages; nothing here is wire.
import type { AnswerOutcome } from './error-codes.js'

/** A call's answer, already serialized: the front sends `body` as it is. */
export type CallResult = {
  outcome: AnswerOutcome
  body: string
  /**
   * The worker must not serve another call: `failed` (context-isolated after a failure in
   * the handler), `memory` (its heap plus array buffers passed memMB), `crash` (a throw no
   * running call owned was held while it served: workers/stray-errors.ts).
   */
  retire?: 'failed' | 'memory' | 'crash'
}

export type GroupAnswer =
  | { kind: 'result'; result: CallResult }
  /** `memory`, `cpu`: it died of its process being killed for memMB or cpuMs, and is answered as past that limit. */
  | { kind: 'died'; reason: 'crash' | 'memory' | 'cpu'; detail: string }
  /** The service closed its workers while the call ran (a shutdown past its drain). */
  | { kind: 'shutdown' }
  /** The host could not start the call (its tmpDir could not be made): nothing of it ran. */
  | { kind: 'not-started'; why: string }

export type StopReason = 'deadline' | 'cancelled' | 'cpu'

export type ReplaceReason = 'deadline' | 'cancelled' | 'memory' | 'cpu' | 'crash' | 'strict' | 'context-isolated'
