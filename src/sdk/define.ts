// defineTool and defineCheck: typed ways to write the module shapes the host loads
// (a `{ handler }` object as default export, an `{ evaluate }` object), with the index
// fields beside the code so an indexer can read them.
import type { CheckBindings, CheckVerdict, JsonSchema, ToolContext } from './types.js'

export type ToolIndexFields = {
  id?: string
  description?: string
  version?: string
  effects?: Array<Record<string, unknown>>
  needs?: Array<Record<string, unknown>>
  needsSpec?: Record<string, unknown>
  sandbox?: 'none' | 'context-isolated' | 'strict'
  limits?: { memMB: number; cpuMs: number }
  network?: { kind: 'none' | 'unrestricted' }
  mutating?: boolean
  needsApprovalWhenUnattended?: boolean
  pauses?: boolean
  storesFiles?: boolean
  readsFiles?: boolean
  resultIsOutsideData?: boolean
}

export type ToolDefinition<Input = unknown, Output = unknown> = ToolIndexFields & {
  input: JsonSchema
  output: JsonSchema
  handler: (input: Input, ctx: ToolContext) => Output | Promise<Output>
}

export type CheckDefinition<Config = Record<string, unknown>, Trace = unknown> = {
  configSchema?: JsonSchema
  /** The points the check runs at; absent means the final answer only. */
  points?: Array<'before-tool' | 'after-tool' | 'model-step' | 'final-answer'>
  evaluate: (config: Config, trace: Trace, bindings: CheckBindings) => CheckVerdict | boolean | Promise<CheckVerdict | boolean>
}

function isObject(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value)
}

export function defineTool<Input = unknown, Output = unknown>(definition: ToolDefinition<Input, Output>): Readonly<ToolDefinition<Input, Output>> {
  if (typeof definition?.handler !== 'function') throw new TypeError('defineTool needs a handler function')
  if (!isObject(definition.input)) throw new TypeError('defineTool needs an input JSON Schema (an object)')
  if (!isObject(definition.output)) throw new TypeError('defineTool needs an output JSON Schema (an object)')
  return Object.freeze({ ...definition })
}

export function defineCheck<Config = Record<string, unknown>, Trace = unknown>(
  definition: CheckDefinition<Config, Trace>,
): Readonly<CheckDefinition<Config, Trace>> {
  if (typeof definition?.evaluate !== 'function') throw new TypeError('defineCheck needs an evaluate function')
  if (definition.configSchema !== undefined && !isObject(definition.configSchema)) throw new TypeError('defineCheck configSchema must be a JSON Schema object')
  return Object.freeze({ ...definition })
}
