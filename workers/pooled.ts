// The Piscina task module: a warm worker that serves one call per task, again and again, and
// settles each task with the call's answer. A call that must not leave its worker reusable
// (context-isolated after a failure, past memMB, a stray throw) answers with `retire`; the
// pack process then terminates this worker (workers/warm-pool.ts), and until it does, the
// worker runs nothing more: a task it is still given answers `not-run` and goes elsewhere.
import { workerData } from 'node:worker_threads'
import type { ProbeResult, WarmReply, WorkerSetup, WorkerTask } from '../src/protocol/worker-messages.js'
import { listenForAborts } from './abort-registry.js'
import { runCall } from './run-call.js'
import { holdStrayErrors, strayErrorSeen } from './stray-errors.js'
import { startWorker } from './worker-state.js'

holdStrayErrors()
// Kept here, and taken out of workerData before any pack module loads: pack code reads
// workerData, and must not find the abort channel in it.
const setup = { ...(workerData as WorkerSetup) }
delete (workerData as Partial<WorkerSetup>).abortChannel
listenForAborts(setup.abortChannel)
const loaded = await startWorker(setup)
let retiring = false

export default async function task(task: WorkerTask): Promise<WarmReply | ProbeResult> {
  if (task.type === 'probe') return { problems: loaded.problems }
  if (retiring) return { kind: 'not-run' }
  let result = await runCall(loaded.entries, task)
  // A throw no call owned was held while this worker ran (or waited): answer, then retire.
  if (result.retire === undefined && strayErrorSeen()) result = { ...result, retire: 'crash' }
  if (result.retire !== undefined) retiring = true
  return { kind: 'ran', result }
}
