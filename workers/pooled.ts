// The Piscina task module: a warm worker that serves one call at a time, again and again.
// A task is a run of calls: the one Piscina brought, then each the front put in the run's
// mailbox meanwhile (src/protocol/mailbox.ts), answered by message as the next one starts;
// the last answer is the task's result.
// A call that must not leave its worker reusable (context-isolated after a failure, memMB) posts
// its answer beside the task and never settles it, so Piscina cannot hand the worker a new
// call before the front terminates it, and the worker takes nothing more from its mailbox.
import { parentPort, workerData } from 'node:worker_threads'
import type { CallResult, CallTask, ProbeResult, RunEnd, WorkerEvent, WorkerSetup, WorkerTask } from '../src/protocol/worker-messages.js'
import { listenForAborts } from './abort-registry.js'
import { writeAnswerCell } from '../src/protocol/answer-cell.js'
import { takeNext } from '../src/protocol/mailbox.js'
import { runCall } from './run-call.js'
import { installSpinThenPark, spinLongAfterThisCall } from './spin-then-park.js'
import { holdStrayErrors, strayErrorSeen } from './stray-errors.js'
import { startWorker } from './worker-state.js'

holdStrayErrors()
installSpinThenPark()
// Kept here, and taken out of workerData before any pack module loads: pack code reads
// workerData, and must not find the abort channel or the cpuMs start table in it.
const setup = { ...(workerData as WorkerSetup) }
delete (workerData as Partial<WorkerSetup>).abortChannel
delete (workerData as Partial<WorkerSetup>).cpuTable
listenForAborts(setup.abortChannel)
const loaded = await startWorker(setup)

export default async function task(task: WorkerTask): Promise<RunEnd | ProbeResult> {
  if (task.type === 'probe') return { problems: loaded.problems }
  let call: CallTask = task
  for (;;) {
    let result = await runCall(loaded.entries, call)
    // A throw no call owned was held while this worker ran (or waited): answer, then retire.
    if (result.retire === undefined && strayErrorSeen()) result = { ...result, retire: 'crash' }
    if (result.retire !== undefined) return retire(call, result)
    const next = call.mailbox === undefined ? undefined : takeNext(call.mailbox)
    if (next === undefined) {
      spinLongAfterThisCall(call.answerCell !== undefined)
      if (call.answerCell !== undefined) writeAnswerCell(call.answerCell, result)
      return { callId: call.callId, result }
    }
    parentPort!.postMessage({ type: 'kindgi-answer', callId: call.callId, nonce: call.nonce, result } satisfies WorkerEvent)
    call = { type: 'call', ...next, mailbox: call.mailbox, nonce: call.nonce }
  }
}

function retire(call: CallTask, result: CallResult): Promise<never> {
  if (call.answerCell !== undefined) writeAnswerCell(call.answerCell, result)
  parentPort!.postMessage({ type: 'kindgi-result', callId: call.callId, nonce: call.nonce, result } satisfies WorkerEvent)
  return new Promise<never>(() => {})
}
