// The protocol's error codes: one union used by the front, the pool and the workers,
// so a code that is not in pack-protocol.md cannot be written anywhere.
export const ERROR_CODES = [
  'input-validation-failed',
  'output-validation-failed',
  'handler-import-failed',
  'handler-shape-invalid',
  'handler-throw',
  'connection-rejected',
  'check-shape-invalid',
  'malformed-message',
  'unknown-protocol-version',
  'unexpected-message-kind',
  'tool-not-in-pack',
  'check-not-in-pack',
  'tool-version-mismatch',
  'deadline-exceeded',
  'cancelled',
  'pause-not-available',
] as const

export type ErrorCode = (typeof ERROR_CODES)[number]

/** What a protocol message answering a call says: ok, or its error code. */
export type AnswerOutcome = 'ok' | ErrorCode

/**
 * What a `call` line's outcome may say: an answer's, the 421 refusal, or `host-failed` (the
 * host could not start the call — nothing of it ran — and answered 503; or its own code threw
 * on the call, and it answered 500).
 */
export type CallOutcome = AnswerOutcome | 'pack-tenant-mismatch' | 'host-failed'
