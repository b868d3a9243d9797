// What every answer from the host must be, whatever was sent (docs/spec/CONTRACT.md §2, §5): a status
// from the contract's list, a JSON body, and on a 200 invoke a well-formed response message.
// Returns the problem in words, or undefined when the answer keeps the promise.
import { ERROR_CODES } from '../../src/protocol/error-codes.js'
import type { RawAnswer } from './wire.js'

/** The statuses docs/spec/CONTRACT.md §2 lets /v1/invoke and the probes answer (500 excluded on purpose). */
export const CONTRACT_STATUSES = [200, 401, 404, 405, 413, 415, 421, 503] as const
/**
 * Answers about the HTTP exchange itself, for a request the routes never see (README,
 * "Transport answers"): 400 not valid HTTP/1.1, 408 request not received in time, 431
 * headers too large. Each closes the connection; nothing ran.
 */
export const HTTP_STATUSES = [400, 408, 431] as const

const ALLOWED = new Set<number>([...CONTRACT_STATUSES, ...HTTP_STATUSES])
const CODES = new Set<string>(ERROR_CODES)

function isObject(v: unknown): v is Record<string, unknown> {
  return typeof v === 'object' && v !== null && !Array.isArray(v)
}

/** A pack protocol v2 response message (pack-protocol.md), or why it is not one. */
export function responseMessageProblem(body: unknown): string | undefined {
  if (!isObject(body)) return 'not a JSON object'
  if (body.v !== 2) return `v is ${JSON.stringify(body.v)}, not 2`
  switch (body.kind) {
    case 'result':
      return 'output' in body ? undefined : 'a result without output'
    case 'pause':
      if (body.timeoutMs !== undefined && !Number.isInteger(body.timeoutMs)) return 'a pause with a non-integer timeoutMs'
      if (body.name !== undefined && typeof body.name !== 'string') return 'a pause with a non-string name'
      return undefined
    case 'check-result':
      return isObject(body.result) && typeof body.result.passed === 'boolean' ? undefined : 'a check-result without a boolean passed'
    case 'error':
      if (typeof body.code !== 'string' || !CODES.has(body.code)) return `unknown error code ${JSON.stringify(body.code)}`
      if (typeof body.message !== 'string') return 'an error without a message'
      if (body.toolId !== undefined && typeof body.toolId !== 'string') return 'a non-string toolId'
      if (body.checkId !== undefined && typeof body.checkId !== 'string') return 'a non-string checkId'
      return undefined
    default:
      return `unknown kind ${JSON.stringify(body.kind)}`
  }
}

function header(answer: RawAnswer, name: string): string | undefined {
  return answer.headers[name]?.[0]
}

/** The route an answer is for, as the host sees it: the path without its query. */
export function routeOf(target: string): string {
  const q = target.indexOf('?')
  return q === -1 ? target : target.slice(0, q)
}

/**
 * Checks one answer. `method` and `target` are what was sent (when known), so a 200 can be
 * checked against what that route answers.
 */
export function answerProblem(answer: RawAnswer, method: string, target: string | undefined): string | undefined {
  const { status } = answer
  if (status === 500) return `500: ${answer.body.slice(0, 300)}`
  if (!ALLOWED.has(status)) return `status ${status} is not a transport status of docs/spec/CONTRACT.md §2 (${answer.body.slice(0, 200)})`
  if (method === 'HEAD') return undefined
  if (!/^application\/json/i.test(header(answer, 'content-type') ?? '')) {
    return `status ${status} with content-type ${JSON.stringify(header(answer, 'content-type'))}, not JSON (body ${JSON.stringify(answer.body.slice(0, 200))})`
  }
  let body: unknown
  try {
    body = JSON.parse(answer.body)
  } catch {
    return `status ${status} with a body that is not JSON: ${JSON.stringify(answer.body.slice(0, 200))}`
  }
  if (status === 503 && header(answer, 'retry-after') !== '1') return '503 without Retry-After: 1'
  if (status !== 200) return isObject(body) && typeof body.error === 'string' ? undefined : `status ${status} without an error string`
  const route = target === undefined ? undefined : routeOf(target)
  if (route === '/healthz') return isObject(body) && body.status === 'ok' ? undefined : '/healthz 200 is not {"status":"ok"}'
  if (route === '/readyz') return isObject(body) && body.status === 'ready' ? undefined : '/readyz 200 is not {"status":"ready"}'
  if (route === '/v1/info') return isObject(body) && body.protocol === 2 ? undefined : '/v1/info 200 is not an info body'
  if (route === '/v1/invoke') {
    if (header(answer, 'kindgi-artifact-version') === undefined) return 'a 200 invoke without kindgi-artifact-version'
    if (!/^\d+$/.test(header(answer, 'kindgi-duration-ms') ?? '')) return 'a 200 invoke without kindgi-duration-ms'
    return responseMessageProblem(body)
  }
  return undefined
}

/** The parsed JSON body of an answer already checked by answerProblem. */
export function bodyOf(answer: RawAnswer): any {
  return JSON.parse(answer.body)
}
