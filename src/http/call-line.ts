// The `call` line (CONTRACT §1) and the ids it carries. Only ids: never the input, the
// context's secrets or connections, toolFiles or a wait link.
import type { IncomingHttpHeaders } from 'node:http'
import type { CallOutcome } from '../protocol/error-codes.js'
import type { RequestMessage, Target } from '../protocol/wire.js'
import type { CallIds } from '../protocol/worker-messages.js'

const TRACEPARENT = /^[\da-f]{2}-([\da-f]{32})-[\da-f]{16}-[\da-f]{2}$/

/** The trace id of a valid W3C traceparent, else undefined. */
export function traceIdOf(header: string | string[] | undefined): string | undefined {
  if (typeof header !== 'string') return undefined
  const match = TRACEPARENT.exec(header.trim())
  if (match === null || /^0+$/.test(match[1] as string) || header.startsWith('ff')) return undefined
  return match[1]
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
  set('traceId', traceIdOf(headers.traceparent))
  return fields
}

export function callLine(
  about: Target | undefined,
  outcome: CallOutcome,
  startedAt: number,
  fields: CallFields,
  pack: { packId: string; artifactVersion: string } | undefined,
): Record<string, unknown> {
  // Built by assignment, in the line's field order: object spreads cost ~3 % of the front at 32 callers.
  const line: Record<string, unknown> = {}
  if (about !== undefined) {
    line.target = about.target
    line.id = about.id
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
