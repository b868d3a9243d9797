// What every pack-code runner does when it starts, whichever kind it is (a pooled worker
// thread, a strict call's process): put the guards in, then import its modules. What goes in
// depends on the entries it may run (their RunnerTraits): a strict spare is given those alone,
// and its call brings its own entry.
import { type RunnerTraits, runnerTraits } from '../src/protocol/runnable-entry.js'
import type { WorkerSetup } from '../src/protocol/worker-messages.js'
import { installBindingGuard, installNetworkGuard, installSignalGuard } from './guards.js'
import { loadEntries, type Loaded } from './load-entries.js'
import { prepareMemoryWatch } from './memory-watch.js'

/** Guards and loaders, before any pack module loads, so module top-level code is guarded too. */
export async function prepare(traits: RunnerTraits): Promise<void> {
  // Loaded only where a module needs it: node:module and the loader are a strict call's start otherwise.
  if (traits.typescript) (await import('./typescript.js')).installTypeScriptLoader()
  if (traits.memoryWatch) prepareMemoryWatch()
  installSignalGuard(traits.strict)
  installBindingGuard()
  if (traits.networkGuard) installNetworkGuard()
  // Writes, processes and workers need no guard: a strict call's process may write only its
  // own tmpDir and start neither, and the permission model says so (strict-flags.ts).
}

export async function startWorker(given: WorkerSetup): Promise<Loaded> {
  await prepare(runnerTraits(given.entries))
  return loadEntries(given.entries)
}
