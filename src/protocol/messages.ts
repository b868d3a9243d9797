// Builders for response messages and the exact error texts of docs/spec/CONTRACT.md §5/§6, so every
// layer words the same failure the same way.
import type { ErrorCode } from './error-codes.js'
import type { ErrorMessage, JsonObject, SerializedCause, Target, ValidationIssue } from './wire.js'

export function errorMessage(
  code: ErrorCode,
  message: string,
  about?: Target,
  extra?: { cause?: SerializedCause | JsonObject; issues?: ValidationIssue[]; connection?: string },
): ErrorMessage {
  const out: ErrorMessage = { v: 2, kind: 'error', code, message }
  if (about?.target === 'tool') out.toolId = about.id
  if (about?.target === 'check') out.checkId = about.id
  if (extra?.cause !== undefined) out.cause = extra.cause
  if (extra?.issues !== undefined) out.issues = extra.issues
  if (extra?.connection !== undefined) out.connection = extra.connection
  return out
}

export function serializeCause(thrown: unknown): SerializedCause | JsonObject {
  if (thrown instanceof Error || (typeof thrown === 'object' && thrown !== null && 'message' in thrown)) {
    const e = thrown as { name?: unknown; message?: unknown; stack?: unknown }
    const cause: SerializedCause = {
      name: typeof e.name === 'string' ? e.name : 'Error',
      message: typeof e.message === 'string' ? e.message : String(e.message),
    }
    if (typeof e.stack === 'string') cause.stack = e.stack
    return cause
  }
  return { name: 'NonError', message: safeString(thrown) }
}

function safeString(value: unknown): string {
  try {
    return typeof value === 'string' ? value : (JSON.stringify(value) ?? String(value))
  } catch {
    return String(value)
  }
}

/** "Handler for tool "<id>" threw: <Name>: <message>" / "Check "<id>" evaluate() threw: …" */
export function throwText(about: Target, cause: SerializedCause | JsonObject): string {
  const what = `${cause.name}: ${cause.message}`
  return about.target === 'tool' ? `Handler for tool "${about.id}" threw: ${what}` : `Check "${about.id}" evaluate() threw: ${what}`
}

export function handlerThrow(about: Target, thrown: unknown): ErrorMessage {
  const cause = serializeCause(thrown)
  return errorMessage('handler-throw', throwText(about, cause), about, { cause })
}

/** A worker that exited, crashed or ran out of memory mid-call. */
export function workerDied(about: Target, why: string): ErrorMessage {
  const cause = { name: 'WorkerExit', message: `the worker running it exited (${why})` }
  return errorMessage('handler-throw', throwText(about, cause), about, { cause })
}

export function memoryExceeded(about: Target, memMB: number): ErrorMessage {
  const cause = {
    name: 'MemoryLimitExceeded',
    message: `the memory limit (memMB ${memMB}) was exceeded; the worker running it exited`,
  }
  return errorMessage('handler-throw', throwText(about, cause), about, { cause })
}

export function deadlineExceeded(about: Target): ErrorMessage {
  return errorMessage('deadline-exceeded', `${about.id} passed its deadline`, about)
}

export function cpuExceeded(about: Target, cpuMs: number): ErrorMessage {
  return errorMessage('deadline-exceeded', `${about.id} passed its deadline: it used more than its CPU time limit (cpuMs ${cpuMs})`, about)
}

export function cancelled(about: Target): ErrorMessage {
  return errorMessage('cancelled', `${about.id} was cancelled`, about)
}

/** "<What> failed validation at <instancePath>: <first message>" (no " at …" for the root). */
export function validationText(what: string, issues: ValidationIssue[]): string {
  const first = issues[0]
  if (first === undefined) return `${what} failed validation`
  const where = first.instancePath === '' ? '' : ` at ${first.instancePath}`
  return `${what} failed validation${where}: ${first.message}`
}
