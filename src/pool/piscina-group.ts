// Warm workers kept by Piscina for the `none` and `context-isolated` postures: each worker
// holds the group's modules and runs one call at a time. Piscina gives us the queue and
// worker replacement; deadlines, retirement and the abort notice are ours.
import { fileURLToPath } from 'node:url'
import { BroadcastChannel } from 'node:worker_threads'
import { Piscina } from 'piscina'
import type { AbortNotice, CallResult, CallTask, ProbeResult, WorkerEvent } from '../protocol/worker-messages.js'
import {
  ABORT_GRACE_MS, describeDeath, resourceLimits,
  type GroupAnswer, type GroupOptions, type RunningCall, type StopReason, type WorkerGroup,
} from './group.js'

const POOLED_WORKER = fileURLToPath(new URL('../../workers/pooled.js', import.meta.url))

export function createPiscinaGroup(options: GroupOptions & { minThreads: number }): WorkerGroup {
  const pool = new Piscina({
    filename: POOLED_WORKER,
    workerData: { groupKey: options.key, entries: options.entries, abortChannel: options.abortChannel },
    env: options.env,
    execArgv: options.execArgv,
    minThreads: Math.min(options.minThreads, options.maxThreads),
    maxThreads: options.maxThreads,
    idleTimeout: 30_000,
    concurrentTasksPerWorker: 1,
    resourceLimits: resourceLimits(options.memMB),
    atomics: 'disabled',
  })
  const aborts = new BroadcastChannel(options.abortChannel)
  aborts.unref()
  // A call that retires its worker answers here, beside its never-settling task.
  const retiring = new Map<number, (result: CallResult) => void>()
  pool.on('message', (event: WorkerEvent) => {
    if (event?.type === 'kindgi-result') retiring.get(event.callId)?.(event.result)
  })
  // An idle worker that dies (a timer throwing after its call answered) surfaces here.
  pool.on('error', () => options.onReplaced('crash', undefined))

  function run(task: CallTask): RunningCall {
    const controller = new AbortController()
    let settled = false
    let resolveAnswer!: (answer: GroupAnswer) => void
    const answer = new Promise<GroupAnswer>((resolve) => {
      resolveAnswer = (a) => {
        settled = true
        resolve(a)
      }
    })
    const id = task.key.slice(task.key.indexOf(':') + 1)
    retiring.set(task.callId, (result) => {
      resolveAnswer({ kind: 'result', result })
      controller.abort()
      options.onReplaced(result.retireBecause ?? 'context-isolated', id)
    })
    let stopping = false
    const done = pool.run(task, { signal: controller.signal }).then(
      (result: CallResult) => resolveAnswer({ kind: 'result', result }),
      (err: unknown) => {
        if (controller.signal.aborted) return // terminated by us: the answer was already given
        const death = describeDeath(err)
        options.onReplaced(death.reason, id)
        resolveAnswer({ kind: 'died', ...death })
      },
    )
    const freed = done.then(() => {
      retiring.delete(task.callId)
    })
    function stop(reason: StopReason): void {
      if (settled || stopping) return
      stopping = true
      aborts.postMessage({ callId: task.callId, reason: reason === 'cancelled' ? 'cancelled' : 'deadline' } satisfies AbortNotice)
      const grace = setTimeout(() => {
        if (settled) return
        settled = true
        controller.abort()
        options.onReplaced(reason, id)
      }, reason === 'cpu' ? 0 : ABORT_GRACE_MS)
      void freed.then(() => clearTimeout(grace))
    }
    return { answer, freed, stop, threadId: async () => undefined }
  }

  return {
    key: options.key,
    entries: options.entries,
    async probe() {
      const result = (await pool.run({ type: 'probe' })) as ProbeResult
      return result.problems
    },
    run,
    workerCount: () => pool.threads.length,
    async close() {
      aborts.close()
      await pool.destroy()
    },
  }
}
