// Parses a /v1/invoke body into a request message, in the order docs/spec/CONTRACT.md §5 gives,
// answering each failure with the protocol's code. Pure: no I/O, no pack knowledge.
import { errorMessage } from './messages.js'
import type { ErrorMessage, RequestMessage, Target } from './wire.js'

export type Parsed = { kind: 'ok'; message: RequestMessage; about: Target } | { kind: 'error'; error: ErrorMessage; about?: Target }

function isObject(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value)
}

/**
 * A sent value named in an error message: JSON for a scalar, cut to a few dozen characters,
 * and only the type of an array or object, whose JSON could be megabytes or nested deeper
 * than JSON.stringify can write (it throws RangeError there).
 */
function quote(value: unknown): string {
  if (value === undefined) return 'missing'
  if (Array.isArray(value)) return '(an array)'
  if (typeof value === 'object' && value !== null) return '(an object)'
  const text = JSON.stringify(value)
  return text.length > 64 ? `${text.slice(0, 60)}…"` : text
}

function malformed(message: string, about?: Target): Parsed {
  return { kind: 'error', error: errorMessage('malformed-message', message, about), about }
}

export function parseRequest(body: string): Parsed {
  let value: unknown
  try {
    value = JSON.parse(body)
  } catch {
    return malformed('Request body is not valid JSON')
  }
  if (!isObject(value)) return malformed('Request body is not a JSON object')
  if (value.v !== 2) {
    const v = quote(value.v)
    return {
      kind: 'error',
      error: errorMessage('unknown-protocol-version', `Protocol version ${v} is not supported: this service speaks v2`),
    }
  }
  if (value.kind === 'invoke') return parseInvoke(value)
  if (value.kind === 'check-invoke') return parseCheckInvoke(value)
  const kind = quote(value.kind)
  return {
    kind: 'error',
    error: errorMessage('unexpected-message-kind', `Message kind ${kind} is not "invoke" or "check-invoke"`),
  }
}

function parseInvoke(value: Record<string, unknown>): Parsed {
  const tool = value.tool
  if (!isObject(tool) || typeof tool.id !== 'string' || tool.id === '') {
    return malformed('An invoke needs tool.id, a non-empty string')
  }
  const about: Target = { target: 'tool', id: tool.id }
  if (tool.version !== undefined && typeof tool.version !== 'string') {
    return malformed('tool.version must be a string when present', about)
  }
  if (!('input' in value)) return malformed('An invoke needs input', about)
  const ctx = value.ctx
  if (!isObject(ctx) || typeof ctx.tenantId !== 'string' || typeof ctx.runId !== 'string') {
    return malformed('An invoke needs ctx with string tenantId and runId', about)
  }
  return { kind: 'ok', message: value as unknown as RequestMessage, about }
}

function parseCheckInvoke(value: Record<string, unknown>): Parsed {
  const check = value.check
  if (!isObject(check) || typeof check.id !== 'string' || check.id === '') {
    return malformed('A check-invoke needs check.id, a non-empty string')
  }
  const about: Target = { target: 'check', id: check.id }
  if (!isObject(value.config)) return malformed('A check-invoke needs config, an object', about)
  return { kind: 'ok', message: value as unknown as RequestMessage, about }
}
