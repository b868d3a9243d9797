// What every worker does when it starts, whichever pool runs it: listen for aborts, then
// import the group's modules and compile their schemas once.
import { workerData } from 'node:worker_threads'
import type { WorkerSetup } from '../src/protocol/worker-messages.js'
import { listenForAborts } from './abort-registry.js'
import { loadEntries, type Loaded } from './load-entries.js'

export const setup = workerData as WorkerSetup

export async function startWorker(): Promise<Loaded> {
  listenForAborts(setup.abortChannel)
  return loadEntries(setup.entries)
}
