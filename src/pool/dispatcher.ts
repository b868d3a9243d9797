// Admission: the concurrency cap (503 before anything runs), and what a call needs beside its
// group (the grant for its tool files). The call's life after that is call-life.ts's; the
// slot is free again only when the call's worker is. The cap is the process's, not a pool's:
// with --watch a reload starts a pool beside the one whose calls still run, and each counting
// its own let in a second cap's worth of calls (a review, stop 36).
import type { RunnableEntry } from '../protocol/runnable-entry.js'
import type { CallTask } from '../protocol/worker-messages.js'
import { followCall, type CallEnd, type CallLimits } from './call-life.js'
import type { RunningCall, WorkerGroup } from './group.js'
import type { FileGrant, ToolFiles } from './tool-files.js'

export type SlotLimits = CallLimits & {
  /** The call's toolFiles, used by the front on the handler's behalf until the call is answered. */
  files?: FileGrant
}

export type Slot = {
  /** Runs the call on the slot; the slot frees itself when the worker does. Rejects only for a bug of ours, the slot given back. */
  run(entry: RunnableEntry, task: CallTask, limits: SlotLimits): Promise<CallEnd>
  /** Gives the slot back when no call was started on it. */
  release(): void
}

/** A call's use of its tool files, ended with the call. */
type Grant = { end(): void }

/** The service's concurrency cap, shared by every pool of the process (a reload's and the one it replaces). */
export type Cap = { take(): boolean; give(): void }

export function createCap(limit: number): Cap {
  let taken = 0
  return {
    take() {
      if (taken >= limit) return false
      taken++
      return true
    },
    give() {
      taken--
    },
  }
}

export type Dispatcher = {
  /** A slot, or undefined at the cap: the caller answers 503 and nothing has run. */
  admit(): Slot | undefined
  inFlight(): number
  /** Resolves once no slot is taken. */
  idle(): Promise<void>
}

export function createDispatcher(groupOf: (entry: RunnableEntry) => WorkerGroup, cap: Cap, toolFiles: ToolFiles): Dispatcher {
  /** This pool's calls: it is retired once they are done. */
  let taken = 0
  let idleWaiters: Array<() => void> = []

  function free(): void {
    taken--
    cap.give()
    if (taken > 0) return
    const waiters = idleWaiters
    idleWaiters = []
    for (const w of waiters) w()
  }

  /** The file token is valid until the call's answer or deadline, whichever comes first: its end. */
  function grantFiles(callId: number, files: FileGrant): Grant {
    const ended = new AbortController()
    const revoke = toolFiles.grant(callId, files, ended.signal)
    return {
      end() {
        ended.abort()
        revoke()
      },
    }
  }

  function admit(): Slot | undefined {
    if (!cap.take()) return undefined
    taken++
    let used = false
    let ran = false
    const releaseOnce = () => {
      if (used) return
      used = true
      free()
    }
    return {
      // Once a call runs on it the slot is the call's to free (when its worker is), whatever its caller does.
      release: () => {
        if (!ran) releaseOnce()
      },
      async run(entry, task, limits) {
        ran = true
        let grant: Grant | undefined
        let running: RunningCall
        try {
          grant = limits.files === undefined ? undefined : grantFiles(task.callId, limits.files)
          running = groupOf(entry).run(task)
        } catch (err) {
          // A failure of ours (a bug) before the call had an owner: nothing runs, and the slot is not lost with it.
          grant?.end()
          releaseOnce()
          throw err
        }
        const end = await followCall(running, entry, limits, releaseOnce)
        grant?.end()
        return end
      },
    }
  }

  return {
    admit,
    inFlight: () => taken,
    idle: () => (taken === 0 ? Promise.resolve() : new Promise<void>((resolve) => idleWaiters.push(resolve))),
  }
}
