// Builds the ctx a handler receives (docs/spec/CONTRACT.md §6): the wire context minus toolFiles, plus
// abortSignal, log, pause and files. secrets, connections and log are non-enumerable so
// spreading or printing ctx never shows them.
import type { WireContext } from '../src/protocol/wire.js'
import type { CallTask } from '../src/protocol/worker-messages.js'
import type { RunnableEntry } from '../src/protocol/runnable-entry.js'
import { callLogger } from './call-log.js'

export const PAUSE = Symbol('kindgi.pause')

export type PauseRequest = { [PAUSE]: true; timeoutMs?: unknown; name?: unknown }

export function isPauseRequest(value: unknown): value is PauseRequest {
  return typeof value === 'object' && value !== null && (value as PauseRequest)[PAUSE] === true
}

const HIDDEN = ['secrets', 'connections'] as const

export function buildToolContext(
  entry: RunnableEntry,
  wire: WireContext,
  signal: AbortSignal,
  task: Pick<CallTask, 'ids' | 'tmpDir'>,
  files: object | undefined,
): Record<string, unknown> {
  const ctx: Record<string, unknown> = {}
  for (const [key, value] of Object.entries(wire)) {
    if (key === 'toolFiles' || (HIDDEN as readonly string[]).includes(key)) continue
    // defineProperty, not assignment: a wire key named __proto__ stays an own field, never ctx's prototype.
    Object.defineProperty(ctx, key, { value, enumerable: true, writable: true, configurable: true })
  }
  for (const key of HIDDEN) {
    if (wire[key] !== undefined) Object.defineProperty(ctx, key, { value: wire[key], enumerable: false })
  }
  Object.defineProperty(ctx, 'log', { value: callLogger({ target: 'tool', id: entry.id }, task.ids), enumerable: false })
  ctx.abortSignal = signal
  ctx.pause = (options?: { timeoutMs?: unknown; name?: unknown }): PauseRequest => ({
    [PAUSE]: true,
    timeoutMs: options?.timeoutMs,
    name: options?.name,
  })
  if (task.tmpDir !== undefined) ctx.tmpDir = task.tmpDir
  if (files !== undefined) ctx.files = files
  return ctx
}
