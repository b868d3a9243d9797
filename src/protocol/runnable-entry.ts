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

/**
 * What a runner of entries (a warm worker, a strict call's process) puts in before any pack
 * module loads: decided by every entry it may run, once, where the entries are known. A strict
 * spare gets only these, not the entries: its call brings its own.
 */
export type RunnerTraits = {
  /** A TypeScript module among them: the TypeScript loader goes in. */
  typescript: boolean
  /** A memMB among them: the memory watch takes its reading. */
  memoryWatch: boolean
  /** Every one declares network none: the network guard goes in. */
  networkGuard: boolean
  /** Every one is strict: it may signal no process at all (the signal guard). */
  strict: boolean
}

/** A TypeScript module's name; its group says which kind (`m`: .mts, `c`: .cts, empty: .ts). */
export const TYPESCRIPT_FILE = /\.([cm]?)ts$/

/** A path (or a URL's pathname) of a TypeScript module. */
export function isTypeScript(path: string): boolean {
  return TYPESCRIPT_FILE.test(path)
}

export function runnerTraits(entries: readonly RunnableEntry[]): RunnerTraits {
  return {
    typescript: entries.some((e) => isTypeScript(e.absPath)),
    memoryWatch: entries.some((e) => e.memMB !== undefined),
    networkGuard: entries.length > 0 && entries.every((e) => e.networkNone),
    strict: entries.length > 0 && entries.every((e) => e.posture === 'strict'),
  }
}
