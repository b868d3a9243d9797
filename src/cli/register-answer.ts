// What each documented answer of POST /v1/tools means for `register`
// (register-tool-manifest.md): done, already there, send again with the same key after
// Retry-After, or a failure that stops new requests (or, for 401, 403 and 404, everything).

export type RuntimeError = { code?: string; message: string; details?: unknown; requestId?: string }

export type Verdict = { kind: 'registered' } | { kind: 'already-registered' } | { kind: 'retry'; waitMs: number } | { kind: 'failed'; stopAll: boolean }

/** A Retry-After the runtime leaves out is taken as this. */
export const DEFAULT_RETRY_WAIT_MS = 1_000
/** No single wait is longer than this, whatever Retry-After says. */
export const MAX_RETRY_WAIT_MS = 60_000

/** `error` is the answer's error object; a 2xx is registered whatever its body. */
export function verdict(status: number, error: RuntimeError | undefined, retryAfter: string | null): Verdict {
  if (status >= 200 && status < 300) return { kind: 'registered' }
  if (status === 409 && error?.code === 'tool-already-registered') return { kind: 'already-registered' }
  // Nothing ran: the first request with this key still runs, or none ran at all.
  if ((status === 409 && error?.code === 'idempotency-key-in-flight') || status === 429 || status === 503) {
    return { kind: 'retry', waitMs: retryWaitMs(retryAfter) }
  }
  // A bad token or an unknown project is the same for every tool: nothing else can succeed.
  return { kind: 'failed', stopAll: status === 401 || status === 403 || status === 404 }
}

/** Retry-After in whole seconds (or an HTTP date), capped; a missing or odd one is the default. */
export function retryWaitMs(header: string | null, now = Date.now()): number {
  const raw = header?.trim() ?? ''
  let ms = DEFAULT_RETRY_WAIT_MS
  if (/^\d+$/.test(raw)) ms = Number(raw) * 1_000
  else if (raw !== '' && !Number.isNaN(Date.parse(raw))) ms = Math.max(0, Date.parse(raw) - now)
  return Math.min(ms, MAX_RETRY_WAIT_MS)
}

/** The `error` object of a runtime answer, or the start of a body that is not one. */
export function runtimeError(text: string): RuntimeError | undefined {
  if (text.trim() === '') return undefined
  try {
    const error = (JSON.parse(text) as { error?: unknown }).error
    if (typeof error === 'object' && error !== null) {
      const e = error as Record<string, unknown>
      return {
        ...(typeof e.code === 'string' ? { code: e.code } : {}),
        message: typeof e.message === 'string' ? e.message : '',
        ...(e.details === undefined ? {} : { details: e.details }),
        ...(typeof e.requestId === 'string' ? { requestId: e.requestId } : {}),
      }
    }
  } catch {
    // not JSON: say what came instead
  }
  return { message: text.length > 300 ? `${text.slice(0, 300)}…` : text }
}
