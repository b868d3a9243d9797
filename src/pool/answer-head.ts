// What the front checks of an answer a pack process sends, before it goes to the caller and
// into the call line. Pack code can write on its own process's channel, so it can answer its
// own call with any body and any outcome: a red-team pass (stop 35) had a tool without
// `pauses: true` pause its run for 24 days, a call logged `ok` whose body was an error, and a
// body that was no JSON. The front reads only the head the host's own code writes (workers/
// run-call.ts: JSON.stringify of a message whose first keys are fixed) and the last character:
// parsing every body would put up to 16 MiB of JSON on the front's one thread a call. The rest
// of a forged body is pack code's word, as the handler's output is.
import type { CallResult } from '../protocol/call-answers.js'
import type { RunnableEntry } from '../protocol/runnable-entry.js'

const RESULT_HEAD = '{"v":2,"kind":"result","output":'
const PAUSE_HEAD = '{"v":2,"kind":"pause"'
const CHECK_HEAD = '{"v":2,"kind":"check-result","result":'

export type AnswerHead = { kind: 'as-sent' } | { kind: 'pause-not-allowed' } | { kind: 'not-as-sent' }

/** Whether `result` has the head the host's code writes for its outcome, and a pause only where the index allows one. */
export function answerHead(result: CallResult, entry: Pick<RunnableEntry, 'target' | 'pauses'>): AnswerHead {
  const { outcome, body } = result
  if (!body.endsWith('}')) return { kind: 'not-as-sent' }
  if (outcome !== 'ok') return body.startsWith(`{"v":2,"kind":"error","code":"${outcome}","message":`) ? { kind: 'as-sent' } : { kind: 'not-as-sent' }
  if (entry.target === 'check') return body.startsWith(CHECK_HEAD) ? { kind: 'as-sent' } : { kind: 'not-as-sent' }
  if (body.startsWith(RESULT_HEAD)) return { kind: 'as-sent' }
  if (body.startsWith(PAUSE_HEAD)) return entry.pauses ? { kind: 'as-sent' } : { kind: 'pause-not-allowed' }
  return { kind: 'not-as-sent' }
}
