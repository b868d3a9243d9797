// The `call` line (docs/spec/CONTRACT.md §1) and the ids it carries, the caller's W3C trace and the call's
// own span among them. Only ids: never the input, the context's secrets or connections,
// toolFiles or a wait link.
import { randomFillSync } from 'node:crypto'
import type { IncomingHttpHeaders } from 'node:http'
import type { CallOutcome } from '../protocol/error-codes.js'
import type { RequestMessage, Target } from '../protocol/wire.js'
import type { CallIds } from '../protocol/worker-messages.js'

// W3C Trace Context: version-traceid-parentid-flags, every part lowercase hex. A version after
// 00 may append "-…" (parsed as 00, as the spec asks); 00 itself is exactly 55 characters.
const TRACEPARENT = /^([\da-f]{2})-([\da-f]{32})-([\da-f]{16})-[\da-f]{2}(-.*)?$/
const ZERO_TRACE = '0'.repeat(32)
const ZERO_SPAN = '0'.repeat(16)

export type TraceParent = { traceId: string; parentId: string }

/** The trace id and parent span id of a valid W3C traceparent, else undefined (an invalid one is ignored). */
export function traceParentOf(header: string | string[] | undefined): TraceParent | undefined {
  if (typeof header !== 'string') return undefined
  const match = TRACEPARENT.exec(header.trim())
  if (match === null) return undefined
  const traceId = match[2] as string
  const parentId = match[3] as string
  if (match[1] === 'ff' || (match[1] === '00' && match[4] !== undefined)) return undefined
  if (traceId === ZERO_TRACE || parentId === ZERO_SPAN) return undefined
  return { traceId, parentId }
}

// Span ids come from a block of random bytes refilled when used up: one randomFillSync per
// 256 traced calls instead of one per call.
const SPAN_BYTES = 8
const spanPool = Buffer.alloc(SPAN_BYTES * 256)
let spanAt = spanPool.length

/** A fresh span id for the call, a child of `parentId`: 16 lowercase hex, never all zeros nor the parent's. */
export function newSpanId(parentId: string): string {
  for (;;) {
    if (spanAt === spanPool.length) {
      randomFillSync(spanPool)
      spanAt = 0
    }
    const id = spanPool.toString('hex', spanAt, spanAt + SPAN_BYTES)
    spanAt += SPAN_BYTES
    if (id !== parentId && id !== ZERO_SPAN) return id
  }
}

function str(value: unknown): string | undefined {
  return typeof value === 'string' ? value : undefined
}

function header(headers: IncomingHttpHeaders, name: string): string | undefined {
  return str(headers[name])
}

export type CallFields = CallIds & { projectId?: string; orgId?: string }

/** Ids from the message's ctx when it has one, else from the headers. */
export function callFields(headers: IncomingHttpHeaders, message: RequestMessage | undefined): CallFields {
  const ctx = message?.kind === 'invoke' ? message.ctx : undefined
  const fields: CallFields = {}
  const set = (key: keyof CallFields, value: string | undefined) => {
    if (value !== undefined) fields[key] = value
  }
  set('tenantId', str(ctx?.tenantId) ?? header(headers, 'kindgi-tenant-id'))
  set('runId', str(ctx?.runId) ?? header(headers, 'kindgi-run-id'))
  set('requestId', str(ctx?.requestId) ?? header(headers, 'kindgi-request-id'))
  set('projectId', str(ctx?.projectId))
  set('orgId', str(ctx?.orgId))
  const parent = traceParentOf(headers.traceparent)
  if (parent !== undefined) {
    fields.traceId = parent.traceId
    fields.spanId = newSpanId(parent.parentId)
  }
  return fields
}

export function callLine(
  about: Target | undefined,
  outcome: CallOutcome,
  startedAt: number,
  fields: CallFields,
  pack: { packId: string; artifactVersion: string } | undefined,
): Record<string, unknown> {
  // Built by assignment, in the line's field order: object spreads cost more, per call (bench/PROFILE.md, design figures).
  const line: Record<string, unknown> = {}
  if (about !== undefined) {
    line.target = about.target
    line.id = about.id
    if (about.target === 'tool') line.toolId = about.id
    else line.checkId = about.id
  }
  line.outcome = outcome
  line.durationMs = Math.round((performance.now() - startedAt) * 1000) / 1000
  for (const key in fields) line[key] = fields[key as keyof CallFields]
  if (pack !== undefined) {
    line.packId = pack.packId
    line.artifactVersion = pack.artifactVersion
  }
  return line
}
