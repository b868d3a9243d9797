// What the package exports to pack authors: helpers and types for writing tools and checks.
export { defineCheck, defineTool, type CheckDefinition, type ToolDefinition, type ToolIndexFields } from './define.js'
export { connectionRejected, type ConnectionRejectedError } from './connection-rejected.js'
export { IDEMPOTENCY_NAMESPACE, idempotencyKey, uuidV5, type IdempotencyParts } from './idempotency-key.js'
export type {
  CallLogger,
  CheckBindings,
  CheckVerdict,
  JsonSchema,
  PauseOptions,
  PauseRequest,
  StoredFile,
  ToolConnection,
  ToolContext,
  ToolFiles,
} from './types.js'
