// What every worker does when it starts, whichever pool runs it: listen for aborts, then
// import the group's modules and compile their schemas once.
import { workerData } from 'node:worker_threads'
import type { WorkerSetup } from '../src/protocol/worker-messages.js'
import { listenForAborts } from './abort-registry.js'
import { installWriteGuard } from './fs-guard.js'
import { installBindingGuard, installNetworkGuard, installSignalGuard, installSpawnGuard } from './guards.js'
import { loadEntries, type Loaded } from './load-entries.js'
import { installTypeScriptLoader, isTypeScript } from './typescript.js'

export const setup = workerData as WorkerSetup

export async function startWorker(): Promise<Loaded> {
  listenForAborts(setup.abortChannel)
  if (setup.entries.some((e) => isTypeScript(e.absPath))) installTypeScriptLoader()
  // Guards go in before any pack module loads, so module top-level code is guarded too.
  installSignalGuard()
  installBindingGuard()
  if (setup.entries.length > 0 && setup.entries.every((e) => e.networkNone)) installNetworkGuard()
  if (setup.entries.some((e) => e.posture === 'strict')) {
    installSpawnGuard()
    installWriteGuard()
  }
  return loadEntries(setup.entries)
}
