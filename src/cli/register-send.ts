// Sends manifests to POST /v1/tools: up to four at a time, each retried with its own
// Idempotency-Key while the runtime says nothing ran (bounded), and no new request once one
// has failed. Only a 401, 403 or 404 also stops the retries already waiting.
import pLimit from 'p-limit'
import { runtimeError, verdict, type RuntimeError } from './register-answer.js'
import type { ToolManifest } from './tool-manifest.js'

export type Prepared = { manifest: ToolManifest; key: string; label: string }

export type Outcome =
  | { kind: 'registered'; status: number; attempts: number }
  | { kind: 'already-registered'; status: number; attempts: number; error: RuntimeError }
  | { kind: 'failed'; status?: number; error: RuntimeError; attempts: number; stopAll: boolean }
  | { kind: 'skipped'; attempts: number; reason: string }

export type SendOptions = {
  url: string
  token: string
  fetch: typeof fetch
  /** Resolves after `ms`, or as soon as `signal` aborts. */
  sleep(ms: number, signal: AbortSignal): Promise<void>
  concurrency: number
  maxAttempts: number
  /** A request without an answer by then is a failure (it may have run: a rerun is safe). */
  requestTimeoutMs: number
  onRetry(prepared: Prepared, attempt: number, waitMs: number, status: number, error: RuntimeError | undefined): void
  onOutcome(prepared: Prepared, outcome: Outcome): void
}

type Halt = { newRequests: boolean; everything: AbortController }

/** Every manifest's outcome, in the order given. */
export async function sendAll(requests: Prepared[], options: SendOptions): Promise<Outcome[]> {
  const limit = pLimit(options.concurrency)
  const halt: Halt = { newRequests: false, everything: new AbortController() }
  return Promise.all(
    requests.map((prepared) =>
      limit(async () => {
        const outcome: Outcome = halt.newRequests
          ? { kind: 'skipped', attempts: 0, reason: 'not sent: an earlier request failed' }
          : await sendOne(prepared, options, halt)
        if (outcome.kind === 'failed') {
          // Set before this slot frees, so no request starts after a failure.
          halt.newRequests = true
          if (outcome.stopAll) halt.everything.abort()
        }
        options.onOutcome(prepared, outcome)
        return outcome
      }),
    ),
  )
}

async function sendOne(prepared: Prepared, options: SendOptions, halt: Halt): Promise<Outcome> {
  const body = JSON.stringify(prepared.manifest)
  const headers = {
    authorization: `Bearer ${options.token}`,
    'content-type': 'application/json',
    accept: 'application/json',
    'idempotency-key': prepared.key,
  }
  for (let attempt = 1; ; attempt++) {
    let response: Response
    let text: string
    try {
      response = await options.fetch(options.url, { method: 'POST', headers, body, signal: AbortSignal.timeout(options.requestTimeoutMs) })
      text = await response.text()
    } catch (err) {
      const e = err as Error & { cause?: Error }
      const why =
        e.name === 'TimeoutError' ? `no answer within ${options.requestTimeoutMs} ms` : `${e.message}${e.cause?.message ? `: ${e.cause.message}` : ''}`
      return {
        kind: 'failed',
        error: { message: `${why} (it may have been registered: a rerun sends the same Idempotency-Key)` },
        attempts: attempt,
        stopAll: false,
      }
    }
    const status = response.status
    const error = runtimeError(text) ?? { message: 'the answer had no body' }
    const next = verdict(status, error, response.headers.get('retry-after'))
    if (next.kind === 'registered') return { kind: 'registered', status, attempts: attempt }
    if (next.kind === 'already-registered') return { kind: 'already-registered', status, attempts: attempt, error }
    if (next.kind === 'failed') return { kind: 'failed', status, error, attempts: attempt, stopAll: next.stopAll }
    if (attempt >= options.maxAttempts) {
      return { kind: 'failed', status, error: { ...error, message: `gave up after ${attempt} attempts: ${error.message}` }, attempts: attempt, stopAll: false }
    }
    options.onRetry(prepared, attempt, next.waitMs, status, error)
    await options.sleep(next.waitMs, halt.everything.signal)
    if (halt.everything.signal.aborted) return { kind: 'skipped', attempts: attempt, reason: 'not retried: a request failed for every tool (401 or 404)' }
  }
}
