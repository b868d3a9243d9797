// The Piscina task module: a warm worker that serves one call at a time, again and again.
// A call that must not leave its worker reusable (context-isolated after a failure, memMB) posts
// its answer beside the task and never settles it, so Piscina cannot hand the worker a new
// call before the front terminates it.
import { parentPort } from 'node:worker_threads'
import type { CallResult, ProbeResult, WorkerEvent, WorkerTask } from '../src/protocol/worker-messages.js'
import { writeAnswerCell } from '../src/protocol/answer-cell.js'
import { runCall } from './run-call.js'
import { installSpinThenPark, spinLongAfterThisCall } from './spin-then-park.js'
import { holdStrayErrors, strayErrorSeen } from './stray-errors.js'
import { startWorker } from './worker-state.js'

holdStrayErrors()
installSpinThenPark()
const loaded = await startWorker()

export default async function task(task: WorkerTask): Promise<CallResult | ProbeResult> {
  if (task.type === 'probe') return { problems: loaded.problems }
  let result = await runCall(loaded.entries, task)
  // A throw no call owned was held while this worker ran (or waited): answer, then retire.
  if (result.retire === undefined && strayErrorSeen()) result = { ...result, retire: 'crash' }
  spinLongAfterThisCall(task.answerCell !== undefined)
  if (task.answerCell !== undefined) writeAnswerCell(task.answerCell, result)
  if (result.retire === undefined) return result
  const event: WorkerEvent = { type: 'kindgi-result', callId: task.callId, result }
  parentPort!.postMessage(event)
  return new Promise<never>(() => {})
}
