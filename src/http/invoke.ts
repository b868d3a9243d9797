// POST /v1/invoke after the route, method, token and tenant-header checks: readiness,
// content type, size, admission, parse, the ctx tenant, then one worker call. Every 503
// here means the call never reached a worker.
import type { HttpBindings } from '@hono/node-server'
import type { ServerResponse } from 'node:http'
import type { Context } from 'hono'
import type { CallOutcome } from '../protocol/error-codes.js'
import { parseRequest } from '../protocol/parse.js'
import type { RequestMessage, Target } from '../protocol/wire.js'
import type { RunnableEntry } from '../protocol/runnable-entry.js'
import type { FileGrant } from '../pool/tool-files.js'
import { resolveEntry, servesId, type Serving } from '../serving.js'
import { callFields, callLine, type CallFields } from './call-line.js'
import { notReady, refusalReason, type FrontState } from './front-state.js'
import { tenantMismatch } from './access-checks.js'
import { BODY_LIMIT, readBody } from './read-body.js'
import { drainRefused } from './drain-refused.js'
import type { Slot } from '../pool/dispatcher.js'
import { errorMessage } from '../protocol/messages.js'

type Ctx = Context<{ Bindings: HttpBindings }>

export const DEFAULT_TIMEOUT_MS = 120_000
const RETRY = { 'Retry-After': '1' }
const TOO_LARGE = { error: 'Request body too large' }

/** Call ids are safe integers, never reused: at a million calls a second they last 285 years. */
let nextCallId = 1

export type InvokeOptions = { bodyTimeoutMs: number }

function timeoutOf(raw: string | string[] | undefined): number {
  if (typeof raw !== 'string' || !/^\d+$/.test(raw)) return DEFAULT_TIMEOUT_MS
  const n = Number(raw)
  return Number.isSafeInteger(n) && n > 0 ? Math.min(n, 2_147_483_647) : DEFAULT_TIMEOUT_MS
}

function isJson(contentType: string | undefined): boolean {
  if (contentType === undefined) return false
  const semi = contentType.indexOf(';')
  return (semi === -1 ? contentType : contentType.slice(0, semi)).trim().toLowerCase() === 'application/json'
}

export async function invoke(c: Ctx, state: FrontState, options: InvokeOptions): Promise<Response> {
  const startedAt = performance.now()
  const { incoming } = c.env
  const headers = incoming.headers

  const refusal = notReady(state)
  if (refusal !== undefined) {
    state.metrics.refused(refusalReason(refusal))
    return c.json(refusal, 503, RETRY)
  }
  const serving = state.serving as Serving
  if (!isJson(headers['content-type'])) return c.json({ error: 'Content-Type must be application/json' }, 415)
  const declared = headers['content-length']
  if (declared !== undefined && Number(declared) > BODY_LIMIT) return tooLarge(c)

  const slot = serving.pool.dispatcher.admit()
  if (slot === undefined) {
    state.metrics.refused('overloaded')
    return c.json({ error: 'overloaded' }, 503, RETRY)
  }
  const logged = { done: false }
  try {
    return await admitted(c, state, options, serving, slot, startedAt, logged)
  } catch (err) {
    // A throw of our own after admission (Hono would answer 500 and keep the slot for good: a
    // red-team pass filled the cap so, stop 35). The slot goes back unless a call ran on it
    // (the call frees it when its worker is free: Slot.release); the call gets its one line.
    slot.release()
    const error = err instanceof Error ? err : new Error(String(err))
    state.log.error('internal-error', { error: error.message, stack: error.stack })
    if (!logged.done) writeCallLine(state, serving, undefined, 'host-failed', startedAt, callFields(headers, undefined))
    return c.json({ error: 'The pack service failed to handle the request' }, 500)
  }
}

/** The rest of an invoke once it holds a slot: every way out either gives the slot back or hands it to the call. */
async function admitted(
  c: Ctx,
  state: FrontState,
  options: InvokeOptions,
  serving: Serving,
  slot: Slot,
  startedAt: number,
  logged: { done: boolean },
): Promise<Response> {
  const { incoming, outgoing } = c.env
  const headers = incoming.headers
  const body = await readBody(incoming, BODY_LIMIT, options.bodyTimeoutMs)
  if (body.kind !== 'ok') {
    slot.release()
    if (body.kind === 'too-large') return tooLarge(c)
    if (body.kind === 'timeout') return c.json({ error: 'Request body not received in time' }, 408, { Connection: 'close' })
    return c.body(null, 499 as never)
  }

  const pack = serving.pack.index
  const log = (about: Target | undefined, outcome: CallOutcome, fields: CallFields) => {
    logged.done = true
    writeCallLine(state, serving, about, outcome, startedAt, fields)
  }
  // A Response built directly with plain headers (node-server's light Response): c.body with
  // more than one header makes Hono build a WHATWG Headers, a cost on every call (bench/PROFILE.md, design figures).
  const answer = (bodyText: string) =>
    new Response(bodyText, {
      status: 200,
      headers: {
        'content-type': 'application/json',
        'kindgi-duration-ms': String(Math.round(performance.now() - startedAt)),
        'kindgi-artifact-version': pack.artifactVersion,
      },
    })

  const parsed = parseRequest(body.text)
  if (parsed.kind === 'error') {
    slot.release()
    log(parsed.about, parsed.error.code, callFields(headers, undefined))
    return answer(JSON.stringify(parsed.error))
  }
  const message = parsed.message
  const fields = callFields(headers, message)
  const tenant = state.config.tenantId
  if (tenant !== undefined && message.kind === 'invoke' && message.ctx.tenantId !== tenant) {
    slot.release()
    log(parsed.about, 'pack-tenant-mismatch', fields)
    const refused = tenantMismatch(`The call's ctx.tenantId "${message.ctx.tenantId}" is not the tenant this pack service is pinned to`)
    return c.json(refused.body, refused.status)
  }
  const resolved = resolveEntry(serving, message)
  if (resolved.kind === 'error') {
    slot.release()
    log(parsed.about, resolved.error.code, fields)
    return answer(JSON.stringify(resolved.error))
  }

  const withoutFiles = toolFilesOf(message, resolved.entry, body.text)
  if (withoutFiles.kind === 'error') {
    slot.release()
    const refused = errorMessage('malformed-message', withoutFiles.why, parsed.about)
    log(parsed.about, refused.code, fields)
    return answer(JSON.stringify(refused))
  }
  const { body: workerBody, files, grant } = withoutFiles
  const callId = nextCallId++
  const ran = await slot.run(
    resolved.entry,
    {
      type: 'call',
      callId,
      key: resolved.entry.key,
      body: workerBody,
      ids: { tenantId: fields.tenantId, runId: fields.runId, requestId: fields.requestId, traceId: fields.traceId, spanId: fields.spanId },
      ...(files !== undefined ? { files } : {}),
    },
    {
      timeoutMs: timeoutOf(headers['kindgi-timeout-ms']),
      onCallerGone: (listener) => callerGone(outgoing, listener),
      ...(grant !== undefined ? { files: grant } : {}),
    },
  )
  if (ran.kind === 'not-started') {
    // The host's own failure before any pack code ran: safe to retry, so a 503, and still one call line.
    log(parsed.about, 'host-failed', fields)
    state.log.error('call-not-started', { target: parsed.about?.target, id: parsed.about?.id, why: ran.why })
    return c.json({ error: `The host could not start the call: ${ran.why}` }, 503, RETRY)
  }
  log(parsed.about, ran.answer.outcome, fields)
  return answer(ran.answer.body)
}

/** An invoke's one call line, and the metrics that count it. */
function writeCallLine(state: FrontState, serving: Serving, about: Target | undefined, outcome: CallOutcome, startedAt: number, fields: CallFields): void {
  const line = callLine(about, outcome, startedAt, fields, serving.pack.index)
  state.log.info('call', line)
  const id = about !== undefined && servesId(serving, about) ? about.id : undefined
  state.metrics.callFinished({ target: about?.target, id, outcome, durationMs: line.durationMs as number })
}

/** The caller went away: the response closed before it was written. */
function callerGone(outgoing: ServerResponse, listener: () => void): () => void {
  if (outgoing.destroyed && !outgoing.writableEnded) {
    queueMicrotask(listener)
    return () => undefined
  }
  const onClose = () => {
    if (!outgoing.writableEnded) listener()
  }
  // 'close' fires once per response: `on` spares the wrapper `once` allocates for every call.
  outgoing.on('close', onClose)
  return () => outgoing.off('close', onClose)
}

/**
 * toolFiles never reaches pack code (docs/spec/CONTRACT.md §7): the worker gets the message without it,
 * and which of files.store/read the handler may use; the front keeps the URL and token.
 */
function toolFilesOf(
  message: RequestMessage,
  entry: RunnableEntry,
  raw: string,
): { kind: 'ok'; body: string; files?: { store: boolean; read: boolean }; grant?: FileGrant } | { kind: 'error'; why: string } {
  if (message.kind !== 'invoke' || message.ctx.toolFiles === undefined) return { kind: 'ok', body: raw }
  const { toolFiles, ...ctx } = message.ctx
  let body: string
  try {
    body = JSON.stringify({ ...message, ctx })
  } catch (err) {
    // JSON.parse reads any depth; JSON.stringify recurses, and on Node 24 an input nested some
    // thousands deep overflows its stack.
    return {
      kind: 'error',
      why: `The request cannot be passed on without its ctx.toolFiles: ${(err as Error).message} (is its input nested thousands of levels deep?)`,
    }
  }
  const store = entry.storesFiles && typeof ctx.idempotencyKey === 'string'
  const read = entry.readsFiles
  const valid = typeof toolFiles === 'object' && toolFiles !== null && typeof toolFiles.url === 'string' && typeof toolFiles.token === 'string'
  if (!valid || (!store && !read)) return { kind: 'ok', body }
  return { kind: 'ok', body, files: { store, read }, grant: { url: toolFiles.url, token: toolFiles.token } }
}

/**
 * The connection is not closed with the answer: the rest of the body is drained first
 * (drain-refused.ts), so the client reads the 413 whole instead of a reset. Node closes a
 * connection at once after an answer to a client that asked for `close` (HTTP/1.0 too), unless
 * the answer names its connection otherwise: so such an answer says keep-alive, and the drain
 * closes the connection once the body is in.
 */
function tooLarge(c: Ctx): Response {
  const drain = drainRefused(c.env.incoming, c.env.outgoing)
  return drain === 'then-close' ? c.json(TOO_LARGE, 413, { Connection: 'keep-alive' }) : c.json(TOO_LARGE, 413)
}
