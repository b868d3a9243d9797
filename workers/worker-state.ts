// What every pack-code runner does when it starts, whichever kind it is (a pooled worker
// thread, a strict call's process): put the guards in, then import the group's modules and
// compile their schemas once.
import type { WorkerSetup } from '../src/protocol/worker-messages.js'
import { installBindingGuard, installNetworkGuard, installSignalGuard, installSpawnGuard } from './guards.js'
import { loadEntries, type Loaded } from './load-entries.js'
import { prepareMemoryWatch } from './memory-watch.js'
import { installTypeScriptLoader, isTypeScript } from './typescript.js'

/** The setup this runner was started with (set once, by prepare). */
export let setup: WorkerSetup

/** Every tool of the runner declares network none: the network guard goes in. */
export function guardsNetwork(given: WorkerSetup): boolean {
  return given.entries.length > 0 && given.entries.every((e) => e.networkNone)
}

/** Guards and loaders, before any pack module loads, so module top-level code is guarded too. */
export function prepare(given: WorkerSetup): void {
  setup = given
  if (setup.entries.some((e) => isTypeScript(e.absPath))) installTypeScriptLoader()
  if (setup.entries.some((e) => e.memMB !== undefined)) prepareMemoryWatch()
  installSignalGuard()
  installBindingGuard()
  if (guardsNetwork(setup)) installNetworkGuard()
  // Writes need no guard here: a strict call's process may write only its own tmpDir, and the
  // permission model says so (strict-flags.ts). The spawn guard says why, where Node's error
  // only names a flag.
  if (setup.entries.some((e) => e.posture === 'strict')) installSpawnGuard()
}

export async function startWorker(given: WorkerSetup): Promise<Loaded> {
  prepare(given)
  return loadEntries(setup.entries)
}
