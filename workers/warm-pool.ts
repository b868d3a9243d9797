// A warm group's Piscina pool, inside its pack process: every call is one Piscina task that
// settles with the call's answer, on a worker that runs one call at a time. This module owns
// a call from the moment the pack process hands it over to the moment its worker is free,
// through the states below; nothing else answers it or frees it.
//
//   queued ──start──▶ running ──task settled──▶ ended
//     │                 │  └──stop: abort notice, then past the grace──▶ stopping ──task rejected──▶ ended
//     └──stop──▶ ended  └──retired worker ran nothing (not-run) ──▶ running again, on another worker
//
// The ways back from a worker are two, both Piscina's: the task's result, or its rejection
// (the worker exited, crashed, or was terminated by the task's abort signal).
// Piscina is used through its public API: tasks that settle, `signal` to terminate a running
// call's worker, a `loadBalancer` that records which worker took which call (cpuMs is read from
// that worker's event loop, retirement terminates that worker), `queueOptionsSymbol` to tell the
// balancer which call a task is, `resourceLimits` for memMB, and its worker events.
// What Piscina lacks, and the one workaround: it cannot retire a worker after a task, so a call
// that must not leave its worker reusable has the pack process terminate that worker, and the
// worker itself runs nothing more (it answers `not-run`, and the call goes to another worker).
import { randomUUID } from 'node:crypto'
import { fileURLToPath } from 'node:url'
import { BroadcastChannel, type Worker } from 'node:worker_threads'
import { Piscina } from 'piscina'
import type { CallResult, GroupAnswer, StopReason } from '../src/protocol/call-answers.js'
import { cpuExceeded } from '../src/protocol/messages.js'
import type { RunnableEntry } from '../src/protocol/runnable-entry.js'
import type { AbortNotice, CallTask, FileRequest, ProbeResult, WarmReply, WorkerSetup } from '../src/protocol/worker-messages.js'
import { ABORT_GRACE_MS, describeDeath, resourceLimits, retireReason, WORKER_EXEC_ARGV, type GroupOptions, type RunningCall } from '../src/pool/group.js'
import { createThreadBudget, type BudgetTicket, type Holder } from '../src/pool/thread-budget.js'

const POOLED_WORKER = fileURLToPath(new URL('./pooled.js', import.meta.url))
/** How often a call past its cpuMs of wall time has its worker's busy time read. */
const CPU_CHECK_MS = 20

/** As a front-side group is made (`maxThreads`: the service's concurrency cap), with the pack process's own budget. */
export type WarmPoolOptions = Pick<GroupOptions, 'key' | 'entries' | 'env' | 'memMB' | 'maxThreads' | 'onReplaced' | 'onFileRequest'> & {
  minThreads: number
  /** Calls that may compute at once (KINDGI_PACK_WORKER_THREADS). */
  workerThreads: number
  /** The worker module (tests); the bundled pooled worker by default. */
  workerFile?: string
}

export type WarmPool = {
  probe(): Promise<string[]>
  run(task: CallTask): RunningCall
  workerCount(): number
  /** Worker threads the pool has made that have not exited yet (the front counts the process's threads against it). */
  liveThreads(): number
  close(): Promise<void>
}

type State = 'queued' | 'running' | 'stopping' | 'ended'

type Call = {
  task: CallTask
  entry: RunnableEntry | undefined
  id: string
  state: State
  /** Given once: the worker's answer, the limit it passed, or why it has none. */
  answered: boolean
  ticket: BudgetTicket | undefined
  /** Piscina's signal for the task: aborting it terminates the worker running the call. */
  abort: AbortController
  /** The worker the balancer gave the call to, and its busy time then (calls with cpuMs). */
  threadId: number | undefined
  busyAtStart: number | undefined
  timer: NodeJS.Timeout | undefined
  resolveAnswer(answer: GroupAnswer): void
  resolveFreed(): void
}

/** The key Piscina hands the balancer back, on the task, for the call it carries. */
const CALL = Piscina.queueOptionsSymbol

export function createWarmPool(options: WarmPoolOptions): WarmPool {
  const byKey = new Map(options.entries.map((e) => [e.key, e]))
  const abortChannel = `kindgi-pack-host-abort-${randomUUID()}`
  const setup: WorkerSetup = { groupKey: options.key, entries: options.entries, abortChannel }
  /** Workers by thread id, for busy time and termination. */
  const threads = new Map<number, Worker>()
  /** Every worker the pool made, until its thread has exited (Piscina forgets a worker as it terminates it). */
  const notExited = new Set<Worker>()
  /** Workers terminated (or being) because a call retired them: the balancer gives them nothing. */
  const retired = new Set<number>()
  /** Calls handed to Piscina and not settled, by call id: file requests are honoured only for these. */
  const running = new Map<number, Call>()
  let closing = false

  const pool = new Piscina({
    filename: options.workerFile ?? POOLED_WORKER,
    workerData: setup,
    env: options.env,
    execArgv: WORKER_EXEC_ARGV,
    minThreads: Math.min(options.minThreads, options.maxThreads),
    maxThreads: options.maxThreads,
    idleTimeout: 30_000,
    concurrentTasksPerWorker: 1,
    resourceLimits: resourceLimits(options.memMB),
    loadBalancer: (task, workers) => {
      let chosen: (typeof workers)[number] | null = null
      for (const worker of workers) {
        if (worker.currentUsage === 0 && !worker.terminating && !retired.has(worker.id)) {
          chosen = worker
          break
        }
      }
      const call = ((task as unknown as Record<symbol, unknown>)[CALL] as { call?: Call } | null)?.call
      if (chosen !== null && call !== undefined) startedOn(call, chosen.id)
      return chosen
    },
  })
  pool.on('workerCreate', (worker: { id: number }) => void thread(worker.id))
  pool.on('workerDestroy', (worker: { id: number }) => {
    threads.delete(worker.id)
    // Thread ids are never reused; the calls Piscina rejects with the worker still look it up.
    setTimeout(() => retired.delete(worker.id), 1_000).unref()
  })
  // An idle worker that dies (a timer throwing after its call answered) surfaces here.
  pool.on('error', () => {
    if (!closing) options.onReplaced('crash', undefined)
  })
  // Any worker may post anything here (pack code runs on them): a file request counts only
  // with the nonce of a call Piscina is running, which only the worker running it knows.
  pool.on('message', (event: FileRequest) => {
    if (event?.type !== 'kindgi-files') return
    const call = typeof event.callId === 'number' ? running.get(event.callId) : undefined
    if (call !== undefined && typeof event.nonce === 'string' && call.task.nonce === event.nonce) {
      options.onFileRequest(event)
    } else if (typeof event.port?.postMessage === 'function') {
      event.port.postMessage({ kind: 'error', message: 'The call has ended: its file token is no longer valid' })
      event.port.close()
    }
  })
  const aborts = new BroadcastChannel(abortChannel)
  aborts.unref()

  const holders = (): Holder[] => [...threads.values()].map((t) => ({ key: t, busyMs: () => t.performance.eventLoopUtilization().active }))
  const budget = createThreadBudget(options.workerThreads, holders, { shortCallsOverlap: true })

  function answer(call: Call, given: GroupAnswer): void {
    if (call.answered) return
    call.answered = true
    call.resolveAnswer(given)
  }

  /** The one way a call ends: its worker is done with it (or it never reached one). */
  function end(call: Call, given: GroupAnswer): void {
    if (call.state === 'ended') return
    answer(call, given)
    call.state = 'ended'
    clearTimeout(call.timer)
    running.delete(call.task.callId)
    call.ticket?.done()
    call.resolveFreed()
  }

  function start(call: Call): void {
    if (call.state === 'ended') return
    call.state = 'running'
    call.threadId = undefined
    running.set(call.task.callId, call)
    const sent = { ...call.task, [CALL]: { call } }
    pool.run(sent, { signal: call.abort.signal }).then(
      (reply: WarmReply) => settled(call, reply),
      (err: unknown) => failed(call, err),
    )
  }

  /** A worker Piscina made, found among its threads (it may take a task before its workerCreate event). */
  function thread(threadId: number): Worker | undefined {
    let found = threads.get(threadId)
    if (found === undefined) {
      found = pool.threads.find((t) => t.threadId === threadId)
      if (found !== undefined) {
        threads.set(threadId, found)
        seen(found)
      }
    }
    return found
  }

  function seen(worker: Worker): void {
    if (notExited.has(worker)) return
    notExited.add(worker)
    worker.once('exit', () => notExited.delete(worker))
  }

  /** Told by the balancer, as Piscina posts the task: the call is on this worker from now. */
  function startedOn(call: Call, threadId: number): void {
    call.threadId = threadId
    const cpuMs = call.entry?.cpuMs
    if (cpuMs === undefined || call.state !== 'running') return
    call.busyAtStart = thread(threadId)?.performance.eventLoopUtilization().active
    clearTimeout(call.timer)
    // Busy time never runs ahead of wall time: nothing is read before cpuMs has passed.
    call.timer = setTimeout(() => watchCpu(call, cpuMs), cpuMs)
  }

  function watchCpu(call: Call, cpuMs: number): void {
    if (call.state !== 'running' || call.threadId === undefined) return
    const now = threads.get(call.threadId)?.performance.eventLoopUtilization().active
    if (now === undefined || call.busyAtStart === undefined || now - call.busyAtStart <= cpuMs) {
      call.timer = setTimeout(() => watchCpu(call, cpuMs), CPU_CHECK_MS)
      return
    }
    const entry = call.entry as RunnableEntry
    const message = cpuExceeded({ target: entry.target, id: entry.id }, cpuMs)
    answer(call, { kind: 'result', result: { outcome: message.code, body: JSON.stringify(message) } })
    terminate(call, 'cpu')
  }

  function settled(call: Call, reply: WarmReply): void {
    if (reply?.kind === 'not-run' && call.state === 'running') {
      start(call) // its worker had retired: it ran nothing; another worker runs it
      return
    }
    const result = (reply as { result: CallResult }).result
    if (result.retire !== undefined && call.threadId !== undefined) retire(call.threadId, call.id, result.retire)
    end(call, { kind: 'result', result })
  }

  function failed(call: Call, err: unknown): void {
    if (closing) {
      end(call, { kind: 'shutdown' })
      return
    }
    // On a worker another call retired, after that call: the worker ran nothing of it.
    if (call.state === 'running' && call.threadId !== undefined && retired.has(call.threadId)) {
      start(call)
      return
    }
    if (call.state === 'stopping') {
      end(call, { kind: 'died', reason: 'crash', detail: 'its worker was terminated' })
      return
    }
    const death = describeDeath(err)
    if (!call.answered) options.onReplaced(death.reason, call.id)
    end(call, { kind: 'died', ...death })
  }

  function retire(threadId: number, id: string, why: NonNullable<CallResult['retire']>): void {
    if (retired.has(threadId)) return
    retired.add(threadId)
    options.onReplaced(retireReason(why), id)
    void thread(threadId)?.terminate()
  }

  /** Ends the call's worker: Piscina terminates the worker a task runs on when its signal aborts. */
  function terminate(call: Call, reason: StopReason): void {
    if (call.state !== 'running') return
    call.state = 'stopping'
    clearTimeout(call.timer)
    // Still in Piscina's queue, waiting for a worker to start: no worker is replaced.
    if (call.threadId !== undefined) options.onReplaced(reason, call.id)
    call.abort.abort()
  }

  function run(task: CallTask): RunningCall {
    let resolveAnswer!: (answer: GroupAnswer) => void
    const answered = new Promise<GroupAnswer>((resolve) => (resolveAnswer = resolve))
    let resolveFreed!: () => void
    const freed = new Promise<void>((resolve) => (resolveFreed = resolve))
    const call: Call = {
      task: { ...task, nonce: randomUUID() },
      entry: byKey.get(task.key),
      id: task.key.slice(task.key.indexOf(':') + 1),
      state: 'queued',
      answered: false,
      ticket: undefined,
      abort: new AbortController(),
      threadId: undefined,
      busyAtStart: undefined,
      timer: undefined,
      resolveAnswer,
      resolveFreed,
    }
    if (closing) end(call, { kind: 'shutdown' })
    else call.ticket = budget.enqueue(() => start(call))

    const stop = (reason: StopReason): void => {
      if (call.state === 'queued') {
        call.ticket?.cancel()
        end(call, { kind: 'died', reason: 'crash', detail: 'it was stopped before it ran' })
        return
      }
      if (call.state !== 'running') return
      if (reason === 'cpu') {
        terminate(call, reason)
        return
      }
      aborts.postMessage({ callId: task.callId, reason, nonce: call.task.nonce } satisfies AbortNotice)
      clearTimeout(call.timer)
      call.timer = setTimeout(() => terminate(call, reason), ABORT_GRACE_MS)
    }
    return { answer: answered, freed, stop, busyMs: () => undefined }
  }

  return {
    async probe() {
      const result = (await pool.run({ type: 'probe' })) as ProbeResult
      return result.problems
    },
    run,
    workerCount: () => threads.size,
    liveThreads() {
      for (const worker of pool.threads) seen(worker)
      return notExited.size
    },
    async close() {
      closing = true
      budget.close()
      aborts.close()
      await pool.destroy()
    },
  }
}
