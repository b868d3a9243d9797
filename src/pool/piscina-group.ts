// Warm workers kept by Piscina for the `none` and `context-isolated` postures: each worker
// holds the group's modules and runs one call at a time. Piscina gives us the queue and
// worker replacement; deadlines, retirement, the abort notice and runs are ours.
// A run is one Piscina task: the call it brought, then each call the front put in the run's
// mailbox while the one before it ran (protocol/mailbox.ts), one after the other on the same
// worker. Calls are never run side by side; a run only saves the worker's park and wake.
import { randomUUID } from 'node:crypto'
import { fileURLToPath } from 'node:url'
import { BroadcastChannel } from 'node:worker_threads'
import { Piscina } from 'piscina'
import type { AbortNotice, CallResult, CallTask, ProbeResult, RunEnd, WorkerEvent, WorkerSetup } from '../protocol/worker-messages.js'
import {
  ABORT_GRACE_MS, busySince, describeDeath, resourceLimits, WORKER_EXEC_ARGV, retireReason,
  type GroupAnswer, type GroupOptions, type RunningCall, type StopReason, type WorkerGroup,
} from './group.js'
import { createCpuSlots, createCpuStartTable, readCallStart, type CpuStartTable } from '../protocol/cpu-start-cell.js'
import { createMailbox, fitsMailbox, MAILBOX_CALLS, openMailbox, putNext, revokeNext, runningCall, type Mailbox } from '../protocol/mailbox.js'
import { createAbortHandle, type AbortHandle } from './abort-handle.js'
import { createFastLane } from './fast-lane.js'
import { STEAL_MS, type BudgetTicket } from './thread-budget.js'

// The worker side bundled into one file at build (npm run build): a worker loads one module
// instead of ~20, ~8 ms less per worker start (measured: 37 -> 29.5 ms for a bare start).
/** How long the answer of a call finished before its worker died may take to arrive. */
const ANSWER_AFTER_DEATH_MS = 1000

const POOLED_WORKER = fileURLToPath(new URL('../../workers/bundled/pooled.js', import.meta.url))

type Call = {
  task: CallTask
  /** The tool or check id, for the replacement log line. */
  id: string
  ticket: BudgetTicket | undefined
  run: Run | undefined
  /** The worker's answer (or its death) was given; nothing later may answer. */
  answered: boolean
  stopping: boolean
  answer(answer: GroupAnswer): void
  freed(): void
  cpuStart: { slot: number; table: CpuStartTable; own: boolean } | undefined
}

type Run = {
  /** The run's secret (CallTask.nonce): a worker's message about a call counts only with it. */
  nonce: string
  mailbox: Mailbox
  abort: AbortHandle
  current: Call
  /** In the mailbox, in order: taken by the worker or not, none has been heard of as started. */
  waiting: Call[]
  /** When the front saw `current` start: nobody waits behind a call that has run a while. */
  currentSince: number
  /** Ended, or being ended by the front: it takes no more calls. */
  over: boolean
}

export function createPiscinaGroup(options: GroupOptions & { minThreads: number }): WorkerGroup {
  const cpuLimited = new Set(options.entries.filter((e) => e.cpuMs !== undefined).map((e) => e.key))
  // One slot per call on a worker (running, or behind one in a mailbox). (Should they run out,
  // a running call brings a table of its own; a call waits in the queue rather than behind.)
  const cpuTable = cpuLimited.size > 0 ? createCpuStartTable(options.maxThreads * 2) : undefined
  const cpuSlots = cpuTable === undefined ? undefined : createCpuSlots(cpuTable)
  const setup: WorkerSetup = { groupKey: options.key, entries: options.entries, abortChannel: options.abortChannel, ...(cpuTable !== undefined ? { cpuTable } : {}) }
  const pool = new Piscina({
    filename: POOLED_WORKER,
    workerData: setup,
    env: options.env,
    execArgv: WORKER_EXEC_ARGV,
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
  /** Calls on a worker or in a mailbox, by call id. */
  const calls = new Map<number, Call>()
  /** Runs whose mailbox has room: where a call may wait behind the running one. */
  const open = new Set<Run>()
  const freeMailboxes: Mailbox[] = []

  // Any worker may post anything here (pack code runs on them): a message about a call counts
  // only when it carries the nonce of the call's run, which only the worker running it knows.
  const fromRunOf = (callId: unknown, nonce: unknown): boolean => {
    const run = typeof callId === 'number' ? calls.get(callId)?.run : undefined
    return run !== undefined && typeof nonce === 'string' && run.nonce === nonce
  }
  pool.on('message', (event: WorkerEvent) => {
    if (event?.type === 'kindgi-answer' && fromRunOf(event.callId, event.nonce)) answeredInRun(event.callId, event.result)
    if (event?.type === 'kindgi-result' && fromRunOf(event.callId, event.nonce)) retired(event.callId, event.result)
    if (event?.type === 'kindgi-files') {
      if (fromRunOf(event.callId, event.nonce)) options.onFileRequest(event)
      else if (typeof event.port?.postMessage === 'function') {
        event.port.postMessage({ kind: 'error', message: 'The call has ended: its file token is no longer valid' })
        event.port.close()
      }
    }
  })
  // An idle worker that dies (a timer throwing after its call answered) surfaces here.
  pool.on('error', () => options.onReplaced('crash', undefined))

  function give(call: Call, answer: GroupAnswer): void {
    if (call.answered) return
    call.answered = true
    call.answer(answer)
  }

  /** The worker is done with the call, or it never ran: its cpu slot and its place are free. */
  function release(call: Call): void {
    giveCpuSlot(call)
    if (calls.get(call.task.callId) === call) calls.delete(call.task.callId)
    call.run = undefined
    call.ticket?.done()
    call.freed()
  }

  function takeCpuSlot(call: Call, ownIfNone: boolean): boolean {
    if (!cpuLimited.has(call.task.key) || call.cpuStart !== undefined) return true
    const slot = cpuSlots?.take()
    if (slot !== undefined) call.cpuStart = { slot, table: cpuTable!, own: false }
    else if (ownIfNone) call.cpuStart = { slot: 0, table: createCpuStartTable(1), own: true }
    return call.cpuStart !== undefined
  }

  function startRun(call: Call): void {
    const { task } = call
    const run: Run = { nonce: randomUUID(), mailbox: freeMailboxes.pop() ?? createMailbox(), abort: createAbortHandle(), current: call, waiting: [], currentSince: performance.now(), over: false }
    call.run = run
    calls.set(task.callId, call)
    // Alone on the worker threads, with no file requests to serve: wait for the answer in shared memory.
    const cell = options.budget.running() === 1 && task.files === undefined ? fastLane.offer(task.key) : undefined
    takeCpuSlot(call, true)
    let sent: CallTask = { ...task, mailbox: run.mailbox, nonce: run.nonce }
    if (cell !== undefined) sent.answerCell = cell
    if (call.cpuStart !== undefined) sent = { ...sent, cpuSlot: call.cpuStart.slot, ...(call.cpuStart.own ? { cpuTable: call.cpuStart.table } : {}) }
    openMailbox(run.mailbox, task.callId)
    open.add(run)
    const done = pool.run(sent, { signal: run.abort }).then(
      (end: RunEnd) => runEnded(run, end),
      (err: unknown) => runDied(run, err),
    ).finally(() => {
      if (cell !== undefined) fastLane.release(cell)
      settling.delete(done)
    })
    if (cell === undefined) return
    const early = fastLane.take(task.key, cell)
    if (early === undefined) return
    give(call, { kind: 'result', result: early })
    settling.add(done)
    // Writing the answer is the last thing the worker does for a call: its slot is free now.
    // Piscina hears of it a moment later, and only then does the thread budget move on.
    call.freed()
  }

  /** For the thread budget: put the call in the mailbox of the run with the fewest waiting, whose call started just now. */
  function placeBehind(call: Call): (() => boolean) | undefined {
    const now = performance.now()
    let best: Run | undefined
    for (const run of open) {
      if (now - run.currentSince < STEAL_MS && (best === undefined || run.waiting.length < best.waiting.length)) best = run
    }
    if (best === undefined || !takeCpuSlot(call, false)) return undefined
    const { callId, key, body, ids } = call.task
    if (!putNext(best.mailbox, { callId, key, body, ids, cpuSlot: call.cpuStart?.slot })) {
      open.delete(best) // full, or the run is ending
      giveCpuSlot(call)
      return undefined
    }
    const run = best
    run.waiting.push(call)
    if (run.waiting.length >= MAILBOX_CALLS) open.delete(run)
    call.run = run
    calls.set(callId, call)
    return () => takeBack(run, call)
  }

  function giveCpuSlot(call: Call): void {
    if (call.cpuStart !== undefined && !call.cpuStart.own) cpuSlots?.give(call.cpuStart.slot)
    call.cpuStart = undefined
  }

  /** True when the call had not been taken by the worker: it is out of the run and may go elsewhere. */
  function takeBack(run: Run, call: Call): boolean {
    const at = run.waiting.indexOf(call)
    if (at < 0 || !revokeNext(run.mailbox, call.task.callId)) return false
    run.waiting.splice(at, 1)
    call.run = undefined
    calls.delete(call.task.callId)
    giveCpuSlot(call)
    if (!run.over) open.add(run)
    return true
  }

  /** A run is ending early: the calls still in its mailbox run on other workers. */
  function endRun(run: Run): void {
    run.over = true
    open.delete(run)
    for (const call of [...run.waiting]) {
      if (!takeBack(run, call)) continue
      call.ticket?.promote()
      startRun(call)
    }
  }

  function answeredInRun(callId: number, result: CallResult): void {
    const call = calls.get(callId)
    const run = call?.run
    if (call === undefined || run === undefined) return
    const next = run.waiting[0]
    if (run.current === call && next !== undefined) {
      // The worker took `next` before it posted this answer: it runs now.
      run.waiting.shift()
      run.current = next
      run.currentSince = performance.now()
      next.ticket?.promote()
      if (!run.over) open.add(run)
    }
    give(call, { kind: 'result', result })
    release(call)
  }

  function runEnded(run: Run, end: RunEnd): void {
    run.over = true
    open.delete(run)
    // The worker closed the mailbox before it returned (it closes it only when empty), and
    // never touches it again: it may serve another run. Calls still in `waiting` were taken
    // and answered; their answers come on another port and may arrive after this.
    freeMailboxes.push(run.mailbox)
    const call = calls.get(end.callId)
    if (call === undefined) return
    give(call, { kind: 'result', result: end.result })
    release(call)
  }

  function runDied(run: Run, err: unknown): void {
    const byUs = run.abort.aborted
    endRun(run)
    const death = byUs ? undefined : describeDeath(err)
    const inRun = [run.current, ...run.waiting].filter((call) => call.run === run)
    // Calls the worker finished before the one it died on have their answers on the way: a
    // worker's messages are all delivered before its exit (a crash reaches Piscina first).
    const dying = inRun.findIndex((call) => call.task.callId === runningCall(run.mailbox))
    for (const call of inRun.slice(0, Math.max(0, dying))) awaitAnswer(call)
    const died = dying < 0 ? inRun : inRun.slice(dying)
    if (death !== undefined && died[0] !== undefined && !died[0].answered && !died[0].stopping) options.onReplaced(death.reason, died[0].id)
    for (const call of died) {
      // Terminated by us: the call it was for was answered already.
      give(call, death === undefined ? { kind: 'died', reason: 'crash', detail: 'its worker was terminated' } : { kind: 'died', ...death })
      release(call)
    }
  }

  /** Its answer was posted before the worker died; should it never come, the call must not hold its slot. */
  function awaitAnswer(call: Call): void {
    setTimeout(() => {
      if (call.answered) return
      give(call, { kind: 'died', reason: 'crash', detail: 'its answer was lost with its worker' })
      release(call)
    }, ANSWER_AFTER_DEATH_MS).unref()
  }

  /** A call that must not leave its worker reusable answered beside its never-settling task. */
  function retired(callId: number, result: CallResult): void {
    const call = calls.get(callId)
    const run = call?.run
    if (call === undefined || run === undefined) return
    give(call, { kind: 'result', result })
    endRun(run)
    run.abort.abort()
    options.onReplaced(retireReason(result.retire ?? 'failed'), call.id)
  }

  function run(task: CallTask): RunningCall {
    let resolveAnswer!: (answer: GroupAnswer) => void
    const answer = new Promise<GroupAnswer>((resolve) => (resolveAnswer = resolve))
    let resolveFreed!: () => void
    const freed = new Promise<void>((resolve) => (resolveFreed = resolve))
    const call: Call = {
      task,
      id: task.key.slice(task.key.indexOf(':') + 1),
      ticket: undefined,
      run: undefined,
      answered: false,
      stopping: false,
      answer: resolveAnswer,
      freed: resolveFreed,
      cpuStart: undefined,
    }
    const canWaitBehind = task.files === undefined && fitsMailbox(task.body)
    call.ticket = options.budget.enqueue(() => startRun(call), canWaitBehind ? () => placeBehind(call) : undefined)

    function stop(reason: StopReason): void {
      if (call.answered || call.stopping) return
      call.stopping = true
      // Still waiting for a thread, or in a mailbox the worker has not taken it from: nothing ran.
      if (call.run === undefined && call.ticket?.cancel() === true) {
        call.freed()
        return
      }
      const waiting = call.run
      if (waiting !== undefined && waiting.current !== call && takeBack(waiting, call)) {
        release(call)
        return
      }
      aborts.postMessage({ callId: task.callId, reason: reason === 'cancelled' ? 'cancelled' : 'deadline', nonce: call.run?.nonce } satisfies AbortNotice)
      const grace = setTimeout(() => {
        const on = call.run
        if (call.answered || on === undefined || on.over) return
        // Calls waiting after this one must not die with it; if the worker took one, this call is done.
        const moved: Call[] = []
        let done = false
        for (const next of on.waiting.slice(on.waiting.indexOf(call) + 1)) {
          if (takeBack(on, next)) moved.push(next)
          else done = true
          if (done) break
        }
        for (const next of moved) {
          next.ticket?.promote()
          startRun(next)
        }
        if (done) return
        call.answered = true
        endRun(on)
        on.abort.abort()
        options.onReplaced(reason, call.id)
      }, reason === 'cpu' ? 0 : ABORT_GRACE_MS)
      void freed.then(() => clearTimeout(grace))
    }
    const busyMs = () => {
      const start = call.cpuStart === undefined ? undefined : readCallStart(call.cpuStart.table, call.cpuStart.slot, task.callId)
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
    holders: () => pool.threads.map((w) => ({ key: w, busyMs: () => w.performance.eventLoopUtilization().active })),
    async close() {
      // Calls answered from their answer cell may still be settling in Piscina (a moment).
      await Promise.allSettled(settling)
      aborts.close()
      await pool.destroy()
    },
  }
}
