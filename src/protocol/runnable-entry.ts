// One tool version or check as the host runs it: where its code is, what it declares, and the
// posture it runs under. Made at boot from the index (pack-index.ts), read by every layer that
// runs calls: the front's groups, the pack processes and the workers.

export const POSTURES = ['none', 'context-isolated', 'strict'] as const
export type Posture = (typeof POSTURES)[number]

/** Ajv standalone code (a CommonJS module exporting the validate function), by schema. */
export type ValidatorCode = { input?: string; output?: string; config?: string }

export type RunnableEntry = {
  key: string
  target: 'tool' | 'check'
  id: string
  version?: string
  modulePath: string
  absPath: string
  input?: object
  output?: object
  configSchema?: object
  posture: Posture
  memMB?: number
  cpuMs?: number
  networkNone: boolean
  pauses: boolean
  storesFiles: boolean
  readsFiles: boolean
  /** Compiled at boot in the front (validator-code.ts); absent before that. */
  validators?: ValidatorCode
}
