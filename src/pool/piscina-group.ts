// Warm workers kept by Piscina for the `none` and `context-isolated` postures: each worker
// holds the group's modules and runs one call at a time. Piscina gives us the queue and
// worker replacement; deadlines, retirement and the abort notice are ours.
import { fileURLToPath } from 'node:url'
import { BroadcastChannel } from 'node:worker_threads'
import { Piscina } from 'piscina'
import type { AbortNotice, CallResult, CallTask, ProbeResult, WorkerEvent, WorkerSetup } from '../protocol/worker-messages.js'
import {
  ABORT_GRACE_MS, busySince, describeDeath, resourceLimits, retireReason,
  type GroupAnswer, type GroupOptions, type RunningCall, type StopReason, type WorkerGroup,
} from './group.js'
import { createCpuSlots, createCpuStartTable, readCallStart, type CpuStartTable } from '../protocol/cpu-start-cell.js'
import { createAbortHandle } from './abort-handle.js'
import { createFastLane } from './fast-lane.js'

// The worker side bundled into one file at build (npm run build): a worker loads one module
// instead of ~20, ~8 ms less per worker start (measured: 37 -> 29.5 ms for a bare start).
const POOLED_WORKER = fileURLToPath(new URL('../../workers/bundled/pooled.js', import.meta.url))

export function createPiscinaGroup(options: GroupOptions & { minThreads: number }): WorkerGroup {
  const cpuLimited = new Set(options.entries.filter((e) => e.cpuMs !== undefined).map((e) => e.key))
  // One slot per thread: a call holds its slot until its worker is done with it, so calls holding
  // slots never outnumber threads. (Should they, a call brings a table of its own.)
  const cpuTable = cpuLimited.size > 0 ? createCpuStartTable(options.maxThreads) : undefined
  const cpuSlots = cpuTable === undefined ? undefined : createCpuSlots(cpuTable)
  const setup: WorkerSetup = { groupKey: options.key, entries: options.entries, abortChannel: options.abortChannel, ...(cpuTable !== undefined ? { cpuTable } : {}) }
  const pool = new Piscina({
    filename: POOLED_WORKER,
    workerData: setup,
    env: options.env,
    minThreads: Math.min(options.minThreads, options.maxThreads),
    maxThreads: options.maxThreads,
    idleTimeout: 30_000,
    concurrentTasksPerWorker: 1,
    resourceLimits: resourceLimits(options.memMB),
    // Idle workers park in Atomics.wait (after a short spin: workers/spin-then-park.ts).
    atomics: 'sync',
  })
  const fastLane = createFastLane()
  const settling = new Set<Promise<unknown>>()
  const aborts = new BroadcastChannel(options.abortChannel)
  aborts.unref()
  // A call that retires its worker answers here, beside its never-settling task.
  const retiring = new Map<number, (result: CallResult) => void>()
  pool.on('message', (event: WorkerEvent) => {
    if (event?.type === 'kindgi-result') retiring.get(event.callId)?.(event.result)
    if (event?.type === 'kindgi-files') options.onFileRequest(event)
  })
  // An idle worker that dies (a timer throwing after its call answered) surfaces here.
  pool.on('error', () => options.onReplaced('crash', undefined))

  function run(task: CallTask): RunningCall {
    const abort = createAbortHandle()
    let settled = false
    let resolveAnswer!: (answer: GroupAnswer) => void
    const answer = new Promise<GroupAnswer>((resolve) => {
      resolveAnswer = (a) => {
        settled = true
        resolve(a)
      }
    })
    let resolveFreed!: () => void
    const freed = new Promise<void>((resolve) => (resolveFreed = resolve))
    const id = task.key.slice(task.key.indexOf(':') + 1)
    let cpuStart: { slot: number; table: CpuStartTable; own: boolean } | undefined
    let running = false

    const ticket = options.budget.enqueue(() => {
      running = true
      retiring.set(task.callId, (result) => {
        resolveAnswer({ kind: 'result', result })
        abort.abort()
        options.onReplaced(retireReason(result.retire ?? 'failed'), id)
      })
      // Alone on the worker threads, with no file requests to serve: wait for the answer in shared memory.
      const cell = options.budget.running() === 1 && task.files === undefined ? fastLane.offer(task.key) : undefined
      if (cpuLimited.has(task.key)) {
        const slot = cpuSlots?.take()
        cpuStart = slot !== undefined ? { slot, table: cpuTable!, own: false } : { slot: 0, table: createCpuStartTable(1), own: true }
      }
      let sent = task
      if (cell !== undefined) sent = { ...sent, answerCell: cell }
      if (cpuStart !== undefined) sent = { ...sent, cpuSlot: cpuStart.slot, ...(cpuStart.own ? { cpuTable: cpuStart.table } : {}) }
      const done = pool.run(sent, { signal: abort }).then(
        (result: CallResult) => resolveAnswer({ kind: 'result', result }),
        (err: unknown) => {
          if (abort.aborted) return // terminated by us: the answer was already given
          const death = describeDeath(err)
          options.onReplaced(death.reason, id)
          resolveAnswer({ kind: 'died', ...death })
        },
      ).finally(() => {
        if (cell !== undefined) fastLane.release(cell)
        if (cpuStart !== undefined && !cpuStart.own) cpuSlots?.give(cpuStart.slot)
        retiring.delete(task.callId)
        ticket.done()
        resolveFreed()
        settling.delete(done)
      })
      if (cell === undefined) return
      const early = fastLane.take(task.key, cell)
      if (early === undefined) return
      resolveAnswer({ kind: 'result', result: early })
      settling.add(done)
      // Writing the answer is the last thing the worker does for a call: its slot is free now.
      // Piscina hears of it a moment later, and only then does the thread budget move on.
      resolveFreed()
    })

    let stopping = false
    function stop(reason: StopReason): void {
      if (settled || stopping) return
      stopping = true
      // Still waiting for a thread: nothing ran, nothing to terminate.
      if (!running && ticket.cancel()) {
        resolveFreed()
        return
      }
      aborts.postMessage({ callId: task.callId, reason: reason === 'cancelled' ? 'cancelled' : 'deadline' } satisfies AbortNotice)
      const grace = setTimeout(() => {
        if (settled) return
        settled = true
        abort.abort()
        options.onReplaced(reason, id)
      }, reason === 'cpu' ? 0 : ABORT_GRACE_MS)
      void freed.then(() => clearTimeout(grace))
    }
    const busyMs = () => {
      const start = cpuStart === undefined ? undefined : readCallStart(cpuStart.table, cpuStart.slot, task.callId)
      if (start === undefined) return undefined
      const worker = pool.threads.find((t) => t.threadId === start.threadId)
      return worker === undefined ? undefined : busySince(worker, start.busyMsAtStart)
    }
    return { answer, freed, stop, busyMs }
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
    threads: () => pool.threads,
    async close() {
      // Calls answered from their answer cell may still be settling in Piscina (a moment).
      await Promise.allSettled(settling)
      aborts.close()
      await pool.destroy()
    },
  }
}
