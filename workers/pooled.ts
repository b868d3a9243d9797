// The Piscina task module: a warm worker that serves calls one at a time, again and again, and
// settles each task with its call's answer. A task may reach the worker while another runs
// (the pack process lines calls up behind short ones: workers/warm-pool.ts); it waits its
// turn, and runs nothing if the pack process took it back meanwhile (it answers `not-run`:
// workers/shared-memory/turn.ts). A call that must not leave its worker reusable
// (context-isolated after a failure, past memMB, a stray throw) answers with `retire`; the pack
// process then terminates this worker, and until it does, the worker runs nothing more: every
// task after it answers `not-run` and goes elsewhere.
import { MessageChannel, parentPort, workerData } from 'node:worker_threads'
import type { CallTask, ProbeResult, WarmReply, WorkerSetup, WorkerTask } from '../src/protocol/worker-messages.js'
import { listenForAborts } from './abort-registry.js'
import { type Reply, setFileChannel } from './files.js'
import { runCall } from './run-call.js'
import { awaitSettled, takeTurn, type Turn } from './shared-memory/turn.js'
import { holdStrayErrors, strayErrorSeen } from './stray-errors.js'
import { startWorker } from './worker-state.js'

// Taken before any pack module loads (startWorker, below): pack code may replace the global.
const immediate = setImmediate

// A file request goes to the pack process with a port of its own for the reply.
setFileChannel((callId, message, transfer) => {
  const { port1, port2 } = new MessageChannel()
  parentPort!.postMessage({ type: 'kindgi-files', callId, ...message, port: port2 }, [port2, ...transfer])
  return {
    reply: new Promise<Reply>((resolve) =>
      port1.once('message', (reply: Reply) => {
        port1.close()
        resolve(reply)
      }),
    ),
    cancel: () => port1.close(),
  }
})
// Kept here, and taken out of workerData before any pack module loads: pack code reads
// workerData, and must find neither the abort channel nor the turn slots in it.
const setup = { ...(workerData as WorkerSetup) }
delete (workerData as Partial<WorkerSetup>).abortChannel
delete (workerData as Partial<WorkerSetup>).turns
const turns = new Int32Array(setup.turns as SharedArrayBuffer)
listenForAborts(setup.abortChannel)
/** The turn of the call that runs now, then of the last one that ran whose answer is posted. */
let running: Turn | undefined
let posted: Turn | undefined

/**
 * How long an exiting worker waits for the pack process to read the answer it posted last. That
 * process's event loop runs no pack code and reads it within a turn; this bounds the wait should
 * the process be starved.
 */
const READ_WAIT_MS = 2_000

/** The worker is about to end by a call's own doing: the pack process reads the answer ahead first. */
function answerAheadRead(): void {
  if (posted !== undefined) awaitSettled(turns, posted, READ_WAIT_MS)
}

// Both ways a call can end its worker, registered before any pack module loads (which could
// replace process.on): process.exit emits `exit`; a throw of the running call is rethrown by
// the stray-error listener, and Node then ends the worker without emitting `exit`, so the
// listener waits before it rethrows. A termination runs neither: the pack process ends a worker
// for a call of its own (past its deadline or cpuMs, or retired), whose line it had read up to it.
process.on('exit', answerAheadRead)
holdStrayErrors(answerAheadRead)

const loaded = await startWorker(setup)
let retiring = false
/** The call before the last one to arrive: each waits for the one before it. */
let last: Promise<unknown> = Promise.resolve()

export default function task(task: WorkerTask): Promise<WarmReply | ProbeResult> {
  if (task.type === 'probe') return Promise.resolve({ problems: loaded.problems })
  const turn = last.then(() => serve(task))
  // The reply's reaction first, the next turn's after it: answerPosted counts on that order.
  const reply = turn.then((answer) => answer)
  last = turn.then(answerPosted, answerPosted)
  return reply
}

/**
 * The next call in line starts only once this one's answer has left the worker: a next call
 * that ends the worker at once (process.exit, an abort) would otherwise take that answer with
 * it. Piscina posts the answer in the continuation of its `await` on this task's reply, a
 * microtask after the reply settles (its reaction comes before this one), unless pack code
 * wrote to stdout or stderr: Piscina first waits for those to drain, and so does this, then for
 * a turn of the event loop. A turn for every call would cost ~1 ms of p99 under load
 * (bench/PROFILE.md, eighth pass). Piscina, told that a worker exited, fails its unfinished
 * tasks without reading what the worker posted just before: a worker that a call ends waits
 * until the pack process has read the answer ahead (answerAheadRead, above).
 */
async function answerPosted(): Promise<void> {
  await null
  let wrote = false
  for (const stream of [process.stdout, process.stderr]) {
    if (stream.writableLength === 0) continue
    wrote = true
    await new Promise((resolve) => stream.write('', resolve))
  }
  if (wrote) await new Promise((resolve) => immediate(resolve))
  // A call that did not run (not-run) leaves the answer ahead of it the one to wait for.
  if (running !== undefined) posted = running
  running = undefined
}

async function serve(task: CallTask): Promise<WarmReply> {
  if (task.withdrawn === true || retiring) return { kind: 'not-run' }
  // Taken only by a call that runs: a turn taken says it ran, should its worker die before its
  // answer is read (warm-pool.ts, failed). From here the pack process can no longer take it back.
  if (task.turn !== undefined) {
    running = takeTurn(turns, task.turn)
    if (running === undefined) return { kind: 'not-run' }
  }
  let result = await runCall(loaded.entries, task)
  // A throw no call owned was held while this worker ran (or waited): answer, then retire.
  if (result.retire === undefined && strayErrorSeen()) result = { ...result, retire: 'crash' }
  if (result.retire !== undefined) retiring = true
  return { kind: 'ran', result }
}
