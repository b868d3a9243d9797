// The strict posture's worker: started ahead as a spare with the group's modules imported,
// it serves exactly one call, answers, and is then terminated by the front.
import { parentPort } from 'node:worker_threads'
import type { CallTask, WorkerEvent } from '../src/protocol/worker-messages.js'
import { abortCall } from './abort-registry.js'
import { runCall } from './run-call.js'
import { startWorker } from './worker-state.js'

const port = parentPort!
const loaded = await startWorker()
port.postMessage({ type: 'kindgi-ready', problems: loaded.problems } satisfies WorkerEvent)

port.on('message', (message: CallTask | { type: 'abort'; callId: number; reason: 'deadline' | 'cancelled' }) => {
  if (message.type === 'abort') {
    abortCall(message)
    return
  }
  void runCall(loaded.entries, message).then((result) => {
    port.postMessage({ type: 'kindgi-result', callId: message.callId, result } satisfies WorkerEvent)
  })
})
