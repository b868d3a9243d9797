// Admission: the concurrency cap (503 before anything runs), and what a call needs before its
// group gets it (a strict call's tmpDir, the grant for its tool files). The call's life after
// that is call-life.ts's; the slot is free again only when the call's worker is.
import type { RunnableEntry } from '../protocol/runnable-entry.js'
import type { CallTask } from '../protocol/worker-messages.js'
import type { CallTmp } from './call-tmp.js'
import { followCall, type CallAnswer, type CallLimits } from './call-life.js'
import type { WorkerGroup } from './group.js'
import type { FileGrant, ToolFiles } from './tool-files.js'

export type SlotLimits = CallLimits & {
  /** The call's toolFiles, used by the front on the handler's behalf until the call is answered. */
  files?: FileGrant
}

/** A call that ran (or was stopped) and its answer; or one the host could not start, so nothing of it ran. */
export type SlotOutcome = { kind: 'answered'; answer: CallAnswer } | { kind: 'not-started'; why: string }

export type Slot = {
  /** Runs the call on the slot; the slot frees itself when the worker does. Never rejects. */
  run(entry: RunnableEntry, task: CallTask, limits: SlotLimits): Promise<SlotOutcome>
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

export function createDispatcher(groupOf: (entry: RunnableEntry) => WorkerGroup, cap: number, callTmp: CallTmp, toolFiles: ToolFiles): Dispatcher {
  let taken = 0
  let idleWaiters: Array<() => void> = []

  function free(): void {
    taken--
    if (taken > 0) return
    const waiters = idleWaiters
    idleWaiters = []
    for (const w of waiters) w()
  }

  function admit(): Slot | undefined {
    if (taken >= cap) return undefined
    taken++
    let used = false
    const releaseOnce = () => {
      if (used) return
      used = true
      free()
    }
    return {
      release: releaseOnce,
      async run(entry, task, limits) {
        let tmpDir: string | undefined
        if (entry.posture === 'strict') {
          try {
            tmpDir = await callTmp.make()
          } catch (err) {
            releaseOnce()
            return { kind: 'not-started', why: `its tmpDir could not be made: ${(err as Error).message}` }
          }
        }
        const running = groupOf(entry).run(tmpDir === undefined ? task : { ...task, tmpDir })
        const done = () => {
          if (tmpDir !== undefined) callTmp.remove(tmpDir)
          releaseOnce()
        }
        if (limits.files === undefined) return { kind: 'answered', answer: await followCall(running, entry, limits, done) }
        // The file token is valid until the call's answer or deadline, whichever comes first.
        const ended = new AbortController()
        const revoke = toolFiles.grant(task.callId, limits.files, ended.signal)
        const answer = await followCall(running, entry, limits, done)
        ended.abort()
        revoke()
        return { kind: 'answered', answer }
      },
    }
  }

  return {
    admit,
    inFlight: () => taken,
    idle: () => (taken === 0 ? Promise.resolve() : new Promise<void>((resolve) => idleWaiters.push(resolve))),
  }
}
