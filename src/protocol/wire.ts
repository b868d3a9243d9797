// Wire shapes of pack protocol v2 (pack-protocol.md) as TypeScript types, shared by the
// front and the workers. Only what this service reads or writes is typed; unknown fields
// pass through untouched.
import type { ErrorCode } from './error-codes.js'

export const PROTOCOL_VERSION = 2

export type JsonObject = { [key: string]: unknown }

export type ValidationIssue = {
  instancePath: string
  schemaPath?: string
  keyword?: string
  params?: JsonObject
  message: string
}

export type SerializedCause = { name: string; message: string; stack?: string }

export type ErrorMessage = {
  v: 2
  kind: 'error'
  code: ErrorCode
  message: string
  toolId?: string
  checkId?: string
  cause?: SerializedCause | JsonObject
  issues?: ValidationIssue[]
  connection?: string
}

export type ToolResultMessage = { v: 2; kind: 'result'; output: unknown }
export type ToolPauseMessage = { v: 2; kind: 'pause'; timeoutMs?: number; name?: string }
export type CheckResultMessage = { v: 2; kind: 'check-result'; result: JsonObject }

export type ResponseMessage = ToolResultMessage | ToolPauseMessage | CheckResultMessage | ErrorMessage

/** The per-call context as the runtime sends it (callContext): its known fields. */
export type CallContextFields = {
  tenantId: string
  runId: string
  projectId?: string
  orgId?: string
  requestId?: string
  idempotencyKey?: string
  env?: Record<string, string>
  secrets?: JsonObject
  connections?: Record<string, JsonObject>
  settings?: JsonObject
  waitToken?: { id: string; url: string }
  toolFiles?: { url: string; token: string }
}

/** The context on the wire: the known fields and whatever else the runtime adds. */
export type WireContext = JsonObject & CallContextFields

export type ToolInvoke = {
  v: 2
  kind: 'invoke'
  tool: { id: string; version?: string }
  input: unknown
  ctx: WireContext
}

export type CheckInvoke = {
  v: 2
  kind: 'check-invoke'
  check: { id: string }
  config: JsonObject
  trace: unknown
}

export type RequestMessage = ToolInvoke | CheckInvoke

/** Who the call is about, for error messages and the call line. */
export type Target = { target: 'tool'; id: string } | { target: 'check'; id: string }
