// What every pack-code runner does when it starts, whichever kind it is (a pooled worker
// thread, a strict call's process): put the guards in, then import its modules. What goes in
// depends on the entries it may run (their RunnerTraits): a strict spare is given those alone,
// and its call brings its own entry.
import { type RunnerTraits, runnerTraits } from '../src/protocol/runnable-entry.js'
import type { WorkerSetup } from '../src/protocol/worker-messages.js'
import { installBindingGuard, installNetworkGuard, installSignalGuard, installSpawnGuard } from './guards.js'
import { loadEntries, type Loaded } from './load-entries.js'
import { prepareMemoryWatch } from './memory-watch.js'
import { installTypeScriptLoader } from './typescript.js'

/** Guards and loaders, before any pack module loads, so module top-level code is guarded too. */
export function prepare(traits: RunnerTraits): void {
  if (traits.typescript) installTypeScriptLoader()
  if (traits.memoryWatch) prepareMemoryWatch()
  installSignalGuard()
  installBindingGuard()
  if (traits.networkGuard) installNetworkGuard()
  // Writes need no guard here: a strict call's process may write only its own tmpDir, and the
  // permission model says so (strict-flags.ts). The spawn guard says why, where Node's error
  // only names a flag.
  if (traits.strict) installSpawnGuard()
}

export async function startWorker(given: WorkerSetup): Promise<Loaded> {
  prepare(runnerTraits(given.entries))
  return loadEntries(given.entries)
}
