// Admission and the life of one call: the concurrency cap (503 before anything runs),
// the deadline and the caller leaving (answered at once), and the slot that is free again
// only when its worker is.
import { cancelled, cpuExceeded, deadlineExceeded, memoryExceeded, workerDied } from '../protocol/messages.js'
import type { CallOutcome } from '../protocol/error-codes.js'
import type { ResponseMessage, Target } from '../protocol/wire.js'
import type { CallTask, RunnableEntry } from '../protocol/worker-messages.js'
import type { CallTmp } from './call-tmp.js'
import type { FileGrant, ToolFiles } from './tool-files.js'
import type { GroupAnswer, RunningCall, WorkerGroup } from './group.js'

const CPU_CHECK_MS = 20

export type CallAnswer = { outcome: CallOutcome; body: string }

export type CallLimits = {
  timeoutMs: number
  /** Calls `listener` once if the caller goes away before the answer; returns the unsubscribe. */
  onCallerGone(listener: () => void): () => void
  /** The call's toolFiles, used by the front on the handler's behalf until the call is answered. */
  files?: FileGrant
}

export type Slot = {
  /** Runs the call on the slot; the slot frees itself when the worker does. */
  run(entry: RunnableEntry, task: CallTask, limits: CallLimits): Promise<CallAnswer>
  /** Gives the slot back when no call was started on it. */
  release(): void
}

export type Dispatcher = {
  /** A slot, or undefined at the cap: the caller answers 503 and nothing has run. */
  admit(): Slot | undefined
  inFlight(): number
  /** Resolves once no slot is taken. */
  idle(): Promise<void>
}

function encode(message: ResponseMessage): CallAnswer {
  return { outcome: message.kind === 'error' ? message.code : 'ok', body: JSON.stringify(message) }
}

function fromGroup(answer: GroupAnswer, entry: RunnableEntry, about: Target): CallAnswer {
  if (answer.kind === 'result') return answer.result
  if (answer.reason === 'memory' && entry.memMB !== undefined) return encode(memoryExceeded(about, entry.memMB))
  return encode(workerDied(about, answer.detail))
}

export function createDispatcher(
  groupOf: (entry: RunnableEntry) => WorkerGroup,
  cap: number,
  callTmp: CallTmp,
  toolFiles: ToolFiles,
): Dispatcher {
  let taken = 0
  let idleWaiters: Array<() => void> = []

  function free(): void {
    taken--
    if (taken === 0) {
      const waiters = idleWaiters
      idleWaiters = []
      for (const w of waiters) w()
    }
  }

  function admit(): Slot | undefined {
    if (taken >= cap) return undefined
    taken++
    let used = false
    return {
      release() {
        if (used) return
        used = true
        free()
      },
      async run(entry, task, limits) {
        used = true
        const about: Target = { target: entry.target, id: entry.id }
        let tmpDir: string | undefined
        try {
          tmpDir = entry.posture === 'strict' ? await callTmp.make() : undefined
        } catch (err) {
          free() // nothing ran: the slot is free; the front answers 500 (the service failed)
          throw err
        }
        const running = groupOf(entry).run(tmpDir === undefined ? task : { ...task, tmpDir })
        void running.freed.then(() => {
          if (tmpDir !== undefined) callTmp.remove(tmpDir)
          free()
        })
        if (limits.files === undefined) return race(running, entry, about, limits)
        // The file token is valid until the call's answer or deadline, whichever comes first.
        const ended = new AbortController()
        const revoke = toolFiles.grant(task.callId, limits.files, ended.signal)
        const answer = await race(running, entry, about, limits)
        ended.abort()
        revoke()
        return answer
      },
    }
  }

  return {
    admit,
    inFlight: () => taken,
    idle: () => (taken === 0 ? Promise.resolve() : new Promise<void>((resolve) => idleWaiters.push(resolve))),
  }
}

function race(running: RunningCall, entry: RunnableEntry, about: Target, limits: CallLimits): Promise<CallAnswer> {
  return new Promise<CallAnswer>((resolve) => {
    let answered = false
    let unsubscribe = () => {}
    const finish = (answer: CallAnswer) => {
      if (answered) return
      answered = true
      clearTimeout(deadline)
      clearTimeout(cpuWatch)
      unsubscribe()
      resolve(answer)
    }
    const deadline = setTimeout(() => {
      running.stop('deadline')
      finish(encode(deadlineExceeded(about)))
    }, limits.timeoutMs)
    const onGone = () => {
      running.stop('cancelled')
      finish(encode(cancelled(about)))
    }
    // cpuMs: the worker's busy time, read often enough to stop a call within ~100 ms past its
    // budget. Busy time never runs ahead of wall time, so nothing is read before cpuMs has
    // passed: a call that ends sooner costs one timer, no polling.
    const cpuMs = entry.cpuMs
    let cpuWatch: NodeJS.Timeout | undefined
    const checkCpu = () => {
      const busy = running.busyMs()
      if (busy === undefined || busy <= cpuMs!) {
        cpuWatch = setTimeout(checkCpu, CPU_CHECK_MS)
        return
      }
      running.stop('cpu')
      finish(encode(cpuExceeded(about, cpuMs!)))
    }
    if (cpuMs !== undefined) cpuWatch = setTimeout(checkCpu, cpuMs)
    unsubscribe = limits.onCallerGone(onGone)
    void running.answer.then((answer) => finish(fromGroup(answer, entry, about)))
  })
}
