// The types a pack author's handler and check see (docs/spec/CONTRACT.md §6–§7), exported by the package.
import type { CallContextFields } from '../protocol/wire.js'

export type JsonSchema = { [keyword: string]: unknown }

export type CallLogger = Record<'debug' | 'info' | 'warn' | 'error', (message?: unknown, fields?: unknown) => void>

/** One resolved connection (protocol 2.9): an account at another app and a short-lived token. */
export type ToolConnection = {
  connectionId: string
  app: string
  appName: string
  accessToken: string
  account: { id: string; label: string }
  expiresAt?: string
}

export type PauseOptions = { timeoutMs?: number; name?: string }

/** What ctx.pause() returns: return it from the handler to answer `pause`. */
export type PauseRequest = { readonly timeoutMs?: unknown; readonly name?: unknown }

export type StoredFile = Record<string, unknown>

export type ToolFiles = {
  /** Present on a call with an idempotencyKey, for a tool whose index entry says storesFiles. */
  store?: (
    bytes: Uint8Array | ArrayBuffer | string,
    options: { name: string; type: string },
  ) => Promise<{ file: StoredFile } | { notStored: string } | { busy: true }>
  /** Present for a tool whose index entry says readsFiles. */
  read?: (artifactId: string) => Promise<{ bytes: Uint8Array } | { notRead: string } | { busy: true }>
}

/**
 * The wire context (pack-protocol.md callContext) minus toolFiles, plus what the host adds.
 * (Built from the known fields: Omit over a type with an index signature would turn every
 * field, tenantId included, into `unknown`.)
 */
export type ToolContext = Omit<CallContextFields, 'toolFiles' | 'secrets' | 'connections'> & { readonly [field: string]: unknown } & {
  /** Non-enumerable: never shown by spreading or printing ctx. */
  readonly secrets?: Record<string, unknown>
  /** Non-enumerable: never shown by spreading or printing ctx. */
  readonly connections?: Record<string, ToolConnection>
  /** Non-enumerable: a logger bound to the call (its ids on every record). */
  readonly log: CallLogger
  /** Fires at the call's deadline or when the caller goes away. */
  abortSignal: AbortSignal
  pause(options?: PauseOptions): PauseRequest
  /** strict posture: the call's own folder, removed after it. */
  tmpDir?: string
  files?: ToolFiles
}

export type CheckBindings = { abortSignal: AbortSignal }

export type CheckVerdict = { passed: boolean; reason?: string; judgeResponse?: string; attributes?: Record<string, unknown>; [field: string]: unknown }
