// The front's owner of one call, from the moment it is handed to its group to the moment its
// slot is free again. Three states, and every way a call can go in one table:
//
//   state      worker answered    a limit (deadline, caller gone, cpuMs)   worker freed
//   running    answered: respond  answered: respond, stop the worker       ended: respond (why none), release
//   answered   —                  —                                        ended: release
//   ended      —                  —                                        —
//
// So the caller is answered once, the worker is stopped at most once and only before an
// answer, and the slot is released once, only when the worker is done. `step` is the table;
// `followCall` feeds it the group's promises and the limits' timers.
import { cancelled, cpuExceeded, deadlineExceeded, errorMessage, memoryExceeded, throwText, workerDied } from '../protocol/messages.js'
import type { CallResult, GroupAnswer, StopReason } from '../protocol/call-answers.js'
import type { AnswerOutcome } from '../protocol/error-codes.js'
import type { RunnableEntry } from '../protocol/runnable-entry.js'
import type { ResponseMessage, Target } from '../protocol/wire.js'
import { answerHead } from './answer-head.js'
import type { RunningCall } from './group.js'

/** A protocol message to send (`body`), and its outcome for the call line. */
export type CallAnswer = { outcome: AnswerOutcome; body: string }

/**
 * How a call ends for its caller: answered with a protocol message, or not started: the host
 * could not start it, nothing of it ran, and the front answers 503 (a caller may send it again).
 */
export type CallEnd = { kind: 'answered'; answer: CallAnswer } | { kind: 'not-started'; why: string }

export type LifeState = 'running' | 'answered' | 'ended'

export type LifeEvent =
  | { kind: 'worker-answered'; end: CallEnd }
  | { kind: 'limit'; reason: StopReason; end: CallEnd }
  /** `why()` is what the caller gets if nothing answered before the worker let go (made only then). */
  | { kind: 'worker-freed'; why(): CallEnd }

export type LifeEffect = { kind: 'respond'; end: CallEnd } | { kind: 'stop'; reason: StopReason } | { kind: 'release' }

export function step(state: LifeState, event: LifeEvent): { state: LifeState; effects: LifeEffect[] } {
  if (state === 'ended') return { state, effects: [] }
  if (event.kind === 'worker-freed') {
    const release: LifeEffect = { kind: 'release' }
    return { state: 'ended', effects: state === 'running' ? [{ kind: 'respond', end: event.why() }, release] : [release] }
  }
  if (state === 'answered') return { state, effects: [] }
  if (event.kind === 'worker-answered') return { state: 'answered', effects: [{ kind: 'respond', end: event.end }] }
  return {
    state: 'answered',
    effects: [
      { kind: 'respond', end: event.end },
      { kind: 'stop', reason: event.reason },
    ],
  }
}

export type CallLimits = {
  timeoutMs: number
  /** Calls `listener` once if the caller goes away before the answer; returns the unsubscribe. */
  onCallerGone(listener: () => void): () => void
}

/** How often a strict call's CPU time is read, from its start. */
const CPU_CHECK_MS = 20

/** A call answered by a message the front made (a limit, a death). */
function answered(message: ResponseMessage): CallEnd {
  return { kind: 'answered', answer: { outcome: message.kind === 'error' ? message.code : 'ok', body: JSON.stringify(message) } }
}

export function fromGroup(answer: GroupAnswer, entry: RunnableEntry, about: Target): CallEnd {
  if (answer.kind === 'result') return checkedResult(answer.result, entry, about)
  if (answer.kind === 'shutdown') return answered(workerDied(about, 'the service shut down before it answered'))
  if (answer.kind === 'not-started') return answer
  if (answer.reason === 'memory' && entry.memMB !== undefined) return answered(memoryExceeded(about, entry.memMB))
  if (answer.reason === 'cpu' && entry.cpuMs !== undefined) return answered(cpuExceeded(about, entry.cpuMs))
  return answered(workerDied(about, answer.detail))
}

/** A pack process's answer as the caller gets it: as sent when its head is the host's code's (answer-head.ts), else said for what it is. */
function checkedResult(result: CallResult, entry: RunnableEntry, about: Target): CallEnd {
  const head = answerHead(result, entry)
  if (head.kind === 'as-sent') return { kind: 'answered', answer: result }
  if (head.kind === 'pause-not-allowed') {
    return answered(errorMessage('pause-not-available', `Tool "${entry.id}" tried to pause, but its index entry does not say pauses: true`, about))
  }
  const cause = { name: 'ForgedAnswer', message: "its process answered with what the host's code does not send" }
  return answered(errorMessage('handler-throw', throwText(about, cause), about, { cause }))
}

/**
 * Runs the table for one call: resolves with the caller's answer, and calls `release` once the
 * worker is done with the call. The deadline, the caller leaving and (for strict calls, whose
 * CPU time the front reads) cpuMs are the limits.
 */
export function followCall(running: RunningCall, entry: RunnableEntry, limits: CallLimits, release: () => void): Promise<CallEnd> {
  const about: Target = { target: entry.target, id: entry.id }
  let state: LifeState = 'running'
  let respond!: (end: CallEnd) => void
  const ended = new Promise<CallEnd>((resolve) => (respond = resolve))
  let deadline: NodeJS.Timeout | undefined
  let cpuWatch: NodeJS.Timeout | undefined
  let unsubscribe = () => {}

  const feed = (event: LifeEvent): void => {
    const next = step(state, event)
    state = next.state
    for (const effect of next.effects) {
      if (effect.kind === 'respond') {
        clearTimeout(deadline)
        clearTimeout(cpuWatch)
        unsubscribe()
        respond(effect.end)
      } else if (effect.kind === 'stop') {
        running.stop(effect.reason)
      } else {
        release()
      }
    }
  }

  deadline = setTimeout(() => feed({ kind: 'limit', reason: 'deadline', end: answered(deadlineExceeded(about)) }), limits.timeoutMs)
  // Read from the start: a process's CPU time runs ahead of wall time with every busy thread it
  // has (libuv's pool: a cpuMs 1000 call read first at 1 s of wall time had used 1,430 ms and
  // more, a red-team pass, stop 35). Only a group whose calls' CPU time the front reads
  // (strict) is watched here.
  const cpuMs = entry.cpuMs
  const busyMs = running.busyMs
  if (cpuMs !== undefined && busyMs !== undefined) {
    const checkCpu = () => {
      const busy = busyMs()
      if (busy === undefined || busy <= cpuMs) {
        cpuWatch = setTimeout(checkCpu, CPU_CHECK_MS)
        return
      }
      feed({ kind: 'limit', reason: 'cpu', end: answered(cpuExceeded(about, cpuMs)) })
    }
    cpuWatch = setTimeout(checkCpu, Math.min(cpuMs, CPU_CHECK_MS))
  }
  unsubscribe = limits.onCallerGone(() => feed({ kind: 'limit', reason: 'cancelled', end: answered(cancelled(about)) }))
  void running.answer.then((answer) => feed({ kind: 'worker-answered', end: fromGroup(answer, entry, about) }))
  void running.freed.then(() => feed({ kind: 'worker-freed', why: () => answered(workerDied(about, 'it let go of the call without an answer')) }))
  return ended
}
