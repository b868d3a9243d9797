// The strict posture: every call runs in a fresh worker that is terminated after it, so no
// module state or global survives a call. Workers are started ahead as spares (modules
// already imported) so a call does not wait for a worker to start.
import { fileURLToPath } from 'node:url'
import { Worker } from 'node:worker_threads'
import type { CallTask, WorkerEvent } from '../protocol/worker-messages.js'
import {
  ABORT_GRACE_MS, busySince, describeDeath, resourceLimits, WORKER_EXEC_ARGV,
  type GroupAnswer, type GroupOptions, type RunningCall, type StopReason, type WorkerGroup,
} from './group.js'
import { createCpuStartTable, readCallStart } from '../protocol/cpu-start-cell.js'
import { spareTarget } from './spare-sizing.js'

// Bundled at build, like the pooled worker (piscina-group.ts): what a strict call waits for is a start.
const SINGLE_USE_WORKER = fileURLToPath(new URL('../../workers/bundled/single-use.js', import.meta.url))

type Spare = { worker: Worker; ready: Promise<string[]> }

export function createStrictGroup(options: GroupOptions): WorkerGroup {
  const spares: Spare[] = []
  const live = new Set<Worker>()
  /** Workers holding a call (spares excluded): what the thread budget samples. */
  const calling = new Set<Worker>()
  const recentCalls: number[] = []
  const cpuLimited = new Set(options.entries.filter((e) => e.cpuMs !== undefined).map((e) => e.key))
  let startMsAverage = 30
  let closed = false

  function spawn(): Spare {
    const started = performance.now()
    const worker = new Worker(SINGLE_USE_WORKER, {
      workerData: { groupKey: options.key, entries: options.entries, abortChannel: options.abortChannel },
      env: options.env,
      execArgv: WORKER_EXEC_ARGV,
      resourceLimits: resourceLimits(options.memMB),
    })
    live.add(worker)
    worker.once('exit', () => live.delete(worker))
    const ready = new Promise<string[]>((resolve) => {
      const onMessage = (event: WorkerEvent) => {
        if (event.type !== 'kindgi-ready') return
        worker.off('message', onMessage)
        startMsAverage = startMsAverage * 0.8 + (performance.now() - started) * 0.2
        resolve(event.problems)
      }
      worker.on('message', onMessage)
      worker.once('error', (err) => resolve([`A strict worker failed while loading: ${(err as Error).message}`]))
      worker.once('exit', (code) => resolve([`A strict worker exited with code ${code} while loading its modules`]))
    })
    worker.unref()
    return { worker, ready }
  }

  function topUp(): void {
    if (closed) return
    const target = Math.min(spareTarget(recentCalls, performance.now(), startMsAverage), options.maxThreads)
    while (spares.length < target) spares.push(spawn())
  }

  function run(task: CallTask): RunningCall {
    recentCalls.push(performance.now())
    const id = task.key.slice(task.key.indexOf(':') + 1)
    let settled = false
    let worker: Worker | undefined
    let terminatedFor: StopReason | 'strict' | 'memory' | undefined
    // A strict worker serves one call: the call brings its own one-slot table.
    const cpuTable = cpuLimited.has(task.key) ? createCpuStartTable(1) : undefined
    let resolveAnswer!: (answer: GroupAnswer) => void
    const answer = new Promise<GroupAnswer>((resolve) => {
      resolveAnswer = (a) => {
        if (settled) return
        settled = true
        resolve(a)
      }
    })
    let resolveFreed!: () => void
    const freed = new Promise<void>((resolve) => (resolveFreed = resolve))

    const ticket = options.budget.enqueue(() => {
      const spare = spares.shift() ?? spawn()
      // Starting a worker takes ~20-30 ms of CPU: with a spare left, start the next one after
      // this call instead of beside it, so the call does not share its core with a start.
      if (spares.length === 0) topUp()
      else void freed.then(topUp)
      const w = spare.worker
      worker = w
      calling.add(w)
      let died: { reason: 'crash' | 'memory'; detail: string } | undefined
      w.on('message', (event: WorkerEvent) => {
        if (event.type === 'kindgi-files') options.onFileRequest(event)
        if (event.type !== 'kindgi-result' || settled) return
        resolveAnswer({ kind: 'result', result: event.result })
        terminatedFor = event.result.retire === 'memory' ? 'memory' : 'strict'
        void w.terminate()
      })
      w.once('error', (err) => {
        died = describeDeath(err)
      })
      const onExit = (code: number) => {
        calling.delete(w)
        ticket.done()
        resolveFreed()
        if (terminatedFor !== undefined) {
          options.onReplaced(terminatedFor, id)
          return
        }
        const death = died ?? { reason: 'crash' as const, detail: `code ${code}` }
        options.onReplaced(death.reason, id)
        resolveAnswer({ kind: 'died', ...death })
      }
      if (live.has(w)) w.once('exit', onExit)
      else onExit(1)
      void spare.ready.then((problems) => {
        if (settled || terminatedFor !== undefined) return
        if (problems.length > 0) {
          terminatedFor = 'strict'
          void w.terminate()
          resolveAnswer({ kind: 'died', reason: 'crash', detail: problems.join('; ') })
          return
        }
        w.postMessage(cpuTable === undefined ? task : { ...task, cpuSlot: 0, cpuTable })
      })
    })

    function stop(reason: StopReason): void {
      if (settled || terminatedFor !== undefined) return
      // Still waiting for its turn: no worker was taken, nothing ran.
      if (worker === undefined && ticket.cancel()) {
        settled = true
        resolveFreed()
        return
      }
      const w = worker as Worker
      w.postMessage({ type: 'abort', callId: task.callId, reason: reason === 'cancelled' ? 'cancelled' : 'deadline' })
      const grace = setTimeout(() => {
        if (terminatedFor !== undefined) return
        settled = true
        terminatedFor = reason
        void w.terminate()
      }, reason === 'cpu' ? 0 : ABORT_GRACE_MS)
      void freed.then(() => clearTimeout(grace))
    }
    const busyMs = () => {
      const start = cpuTable === undefined ? undefined : readCallStart(cpuTable, 0, task.callId)
      return start === undefined || worker === undefined ? undefined : busySince(worker, start.busyMsAtStart)
    }
    return { answer, freed, stop, busyMs }
  }

  return {
    key: options.key,
    entries: options.entries,
    async probe() {
      const spare = spawn()
      const problems = await spare.ready
      if (problems.length === 0) spares.push(spare)
      else await spare.worker.terminate()
      return problems
    },
    run,
    workerCount: () => live.size,
    threads: () => [...calling],
    async close() {
      closed = true
      await Promise.all([...live].map((w) => w.terminate()))
    },
  }
}
