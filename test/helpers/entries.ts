// A runnable entry as the boot makes one (src/protocol/runnable-entry.ts) for a tool of the
// tests' own: version 1.0.0, module tools/<id>.js under `root`, posture none, no limits, unless
// `extra` says otherwise.
import { join } from 'node:path'
import type { RunnableEntry } from '../../src/protocol/runnable-entry.js'

export function toolEntry(id: string, root: string, extra: Partial<RunnableEntry> = {}): RunnableEntry {
  const modulePath = extra.modulePath ?? `tools/${id}.js`
  return {
    key: `tool:${id}@1.0.0`,
    target: 'tool',
    id,
    version: '1.0.0',
    modulePath,
    absPath: join(root, modulePath),
    posture: 'none',
    networkNone: false,
    pauses: false,
    storesFiles: false,
    readsFiles: false,
    ...extra,
  }
}
