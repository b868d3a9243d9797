// A warm group's Piscina pool, inside its pack process: every call is one Piscina task that
// settles with the call's answer, on a worker that runs one call at a time. This module owns
// a call from the moment the pack process hands it over to the moment its worker is done with
// it, through these states; nothing else answers it or frees it.
//
//   queued ──budget──▶ running ──task settled──▶ ended
//     │                   └─ stopped: abort notice; past the grace, its worker is terminated
//     │                      (its turn not yet taken: taken back, as below; a worker that
//     │                      leaves such a task first in line for HELD_MS is terminated)
//     └─ cores taken, a young fast call running ──▶ behind ──its turn──▶ running
//                                                     └─ taken back (stopped, or waited too long) ──▶ queued again, or ended
//                                                        leaving a stand-in in the line that runs nothing (withdrawn)
//
// A call goes behind on arrival when no other call waits in the budget, or from the budget,
// oldest first, as a call starts on its worker (refill): a loaded worker has its next call at
// hand, and does not park between calls only to be woken for the next. It is taken back at once,
// whatever the worker is doing, unless its turn has come (shared-memory/turn.ts); its task stays
// on the worker as a stand-in, which keeps its place in the line and answers not-run at its turn.
//
// A worker's ways back are two, both Piscina's: the task's result, or its rejection (the
// worker exited, crashed, or was terminated). Every call sent to a worker holds a turn slot,
// and its worker takes the turn as it starts it: a call whose worker died before that (it
// waited behind one that died, its worker had retired, or was still busy with what the call
// before left) never ran and is run elsewhere; one that ran is answered. In a pool with limited
// tools, a worker that runs no call is watched from outside it (idle-watch.ts): code a call left
// running there is no call's, and a worker that spends CPU or holds memory past memMB is ended.
// Piscina is used through its public API: tasks that settle; `concurrentTasksPerWorker` so that
// a call can wait behind a short one on its worker (line-up.ts) and start the moment it ends,
// without a trip through this process's event loop; a `loadBalancer` that puts each call where
// this module decided and records which worker took it (cpuMs reads that worker's event loop,
// a stop or a retirement terminates that worker), told which call a task is by
// `queueOptionsSymbol`; `resourceLimits` for memMB; `threads` and its worker events. No task
// has a `signal`: Piscina runs a task that has one alone on its worker.
// What Piscina lacks, and the two workarounds: it cannot retire a worker after a task, so a call
// that must not leave its worker reusable has this module terminate that worker, and the worker
// itself runs nothing more (it answers `not-run`, and the call goes to another worker); and it
// cannot take back a task it has posted to a busy worker without ending that worker, so a call
// waiting behind another is taken back through its turn slot, and its task runs nothing.
import { randomUUID } from 'node:crypto'
import { fileURLToPath } from 'node:url'
import { BroadcastChannel, type Worker } from 'node:worker_threads'
import { Piscina } from 'piscina'
import type { CallResult, GroupAnswer, ReplaceReason, StopReason } from '../src/protocol/call-answers.js'
import { cpuExceeded } from '../src/protocol/messages.js'
import type { RunnableEntry } from '../src/protocol/runnable-entry.js'
import type { AbortNotice, CallTask, FileRequest, ProbeResult, WarmReply, WorkerSetup } from '../src/protocol/worker-messages.js'
import {
  ABORT_GRACE_MS,
  describeDeath,
  replacedId,
  resourceLimits,
  retireReason,
  WORKER_EXEC_ARGV,
  type GroupOptions,
  type RunningCall,
} from '../src/pool/group.js'
import { createThreadBudget, type BudgetTicket, type Holder } from '../src/pool/thread-budget.js'
import { watchIdleWorkers } from './idle-watch.js'
import { BEHIND_MS, createLineUp, LINE } from './line-up.js'
import { createTurns } from './shared-memory/turn.js'
import { AWAKE_FOR_ANSWER_MS, AWAKE_FOR_NEXT_MS, stayAwake } from './stay-awake.js'
import { createWorkerLines } from './worker-lines.js'

/** Calls in a row with nothing else in flight before one counts as lone: under load, streaks this long do not happen. */
const LONE_STREAK = 16
const POOLED_WORKER = fileURLToPath(new URL('./pooled.js', import.meta.url))
/**
 * How long a worker may leave a task that is to run nothing (a stand-in, a call stopped before
 * its turn) first in line before it is taken for held (by code the call before left running)
 * and ended. Longer than the abort grace: a worker finishing the call before (its output
 * draining) is not held.
 */
const HELD_MS = 1_000
/** The time over which workers ended for CPU no call accounts for are counted for the front (onWorkersBurnt). */
const BURNT_WINDOW_MS = 60_000
/** How often a call past its cpuMs of wall time has its worker's busy time read. */
const CPU_CHECK_MS = 20

/** As a front-side group is made (`maxThreads`: the service's concurrency cap), with the pack process's own budget. */
export type WarmPoolOptions = Pick<GroupOptions, 'key' | 'entries' | 'env' | 'memMB' | 'maxThreads' | 'onReplaced'> & {
  /** A worker's ctx.files request, with the port its reply goes back on. */
  onFileRequest(request: FileRequest): void
  minThreads: number
  /** Calls that may compute at once (KINDGI_PACK_WORKER_THREADS). */
  workerThreads: number
  /** The worker module (tests); the bundled pooled worker by default. */
  workerFile?: string
  /** Workers were ended for CPU no call accounts for (idle-watch.ts), `times` within the last BURNT_WINDOW_MS. */
  onWorkersBurnt?(times: number): void
}

export type WarmPool = {
  probe(): Promise<string[]>
  run(task: CallTask): RunningCall
  workerCount(): number
  /** Worker threads the pool has made that have not exited yet (the front counts the process's threads against it). */
  liveThreads(): number
  close(): Promise<void>
}

/** The key Piscina hands the balancer back, on the task, for the call it carries. */
const CALL: unique symbol = Piscina.queueOptionsSymbol as never

/** `withdrawn`: a stand-in for a call taken back from a line, whose task is still on that worker. */
type State = 'queued' | 'behind' | 'running' | 'ended' | 'withdrawn'

type Call = {
  /** The call's own copy of its task, as Piscina gets it: the balancer finds the call on it (CALL). */
  task: CallTask & { [CALL]?: { call: Call } }
  entry: RunnableEntry | undefined
  id: string
  state: State
  /** Given once: the worker's answer, the limit it passed, or why it has none. */
  answered: boolean
  ticket: BudgetTicket | undefined
  /** Why the call was stopped, once it was: it answers no more, and runs no more if it had not. */
  stopped: StopReason | undefined
  /** Its worker was terminated for it (past its stop's grace, or cpuMs). */
  terminated: boolean
  /** The worker to wait behind (chosen by this module), then the one the balancer gave it to. */
  behind: number | undefined
  threadId: number | undefined
  /** When it started running, and its worker's busy time then (calls of a limited pool, until they leave their worker). */
  startedAt: number
  busyAtStart: number | undefined
  timer: NodeJS.Timeout | undefined
  /** It came alone, after a run of calls that came alone: this thread stays awake around it. */
  lone: boolean
  resolveAnswer(answer: GroupAnswer): void
  resolveFreed(): void
}

export function createWarmPool(options: WarmPoolOptions): WarmPool {
  const byKey = new Map(options.entries.map((e) => [e.key, e]))
  const abortChannel = `kindgi-pack-host-abort-${randomUUID()}`
  // Every task in Piscina holds a slot: those on its workers (LINE a worker at most, stand-ins
  // included) and those in its queue, waiting for a worker to start (calls only, no more than
  // the cap). So a call always finds one, and an exiting worker can wait for any answer ahead.
  const turns = createTurns((LINE + 1) * options.maxThreads)
  const setup: WorkerSetup = { groupKey: options.key, entries: options.entries, abortChannel, turns: turns.buffer }
  // A tool with limits is measured on its worker alone: nothing waits behind it, and it waits behind nothing.
  const lineUp = options.entries.every((e) => e.cpuMs === undefined && e.memMB === undefined)
  /** Workers by thread id, for busy time and termination. */
  const threads = new Map<number, Worker>()
  /** Every worker the pool made, until its thread has exited (Piscina forgets a worker as it terminates it). */
  const notExited = new Set<Worker>()
  /** Workers this module is ending (a call retired its worker, or ran past its deadline): the balancer gives them nothing, and calls that reach them run elsewhere. */
  const ending = new Set<number>()
  /** Workers whose death (or breaking) a line has already said. */
  const saidDied = new Set<number>()
  /** Per worker: how many calls have reached it, and the tool of the last (the idle CPU watch). */
  const reachedOn = new Map<number, { count: number; id: string }>()
  /** When workers were ended for CPU no call accounts for, within the last BURNT_WINDOW_MS. */
  let burntAt: number[] = []
  /** Per worker of a limited pool: the busy time (ms) of the calls that have left it (the idle watch counts the rest of its CPU as no call's). */
  const busyInCalls = new Map<number, number>()
  /** Calls handed to Piscina and not settled, by call id: file requests are honoured only for these. */
  const inPiscina = new Map<number, Call>()
  const lines = createWorkerLines<Call>()
  const lineUpPolicy = createLineUp()
  /** Calls waiting in the budget, oldest first (some may have left it): a line that moves up takes the oldest into it. */
  let waiting: Call[] = []
  let closing = false
  /** Calls started in a row while no other was in Piscina or waiting: at LONE_STREAK, calls count as lone. */
  let lonely = 0
  /** This thread is kept awake (stay-awake.ts) until then, while no more than one call is in Piscina. */
  let awakeUntil = 0
  let awake = false

  const pool = new Piscina({
    filename: options.workerFile ?? POOLED_WORKER,
    workerData: setup,
    env: options.env,
    execArgv: WORKER_EXEC_ARGV,
    minThreads: Math.min(options.minThreads, options.maxThreads),
    maxThreads: options.maxThreads,
    idleTimeout: 30_000,
    // Its run and wait histograms: nothing reads them, and they cost every task.
    recordTiming: false,
    concurrentTasksPerWorker: lineUp ? LINE : 1,
    resourceLimits: resourceLimits(options.memMB),
    loadBalancer: (task, workers) => {
      const call = (task as unknown as { [CALL]?: { call: Call } | null })[CALL]?.call
      let chosen: (typeof workers)[number] | undefined
      if (call?.behind !== undefined) chosen = workers.find((w) => w.id === call.behind && !w.terminating && w.currentUsage < LINE)
      chosen ??= workers.find((w) => w.currentUsage === 0 && !w.terminating && !ending.has(w.id))
      if (chosen !== undefined && call !== undefined) reached(call, chosen.id)
      return chosen ?? null
    },
  })
  pool.on('workerCreate', (worker: { id: number }) => void thread(worker.id))
  pool.on('workerDestroy', (worker: { id: number }) => {
    threads.delete(worker.id)
    reachedOn.delete(worker.id)
    busyInCalls.delete(worker.id)
    // Thread ids are never reused; the calls Piscina rejects with the worker still look it up.
    setTimeout(() => {
      ending.delete(worker.id)
      saidDied.delete(worker.id)
    }, 1_000).unref()
  })
  // An idle worker that dies (a timer throwing after its call answered) surfaces here.
  pool.on('error', () => {
    if (!closing) options.onReplaced('crash', undefined)
  })
  // Any worker may post anything here (pack code runs on them): a file request counts only
  // with the nonce of a call Piscina is running, which only the worker running it knows.
  pool.on('message', (event: FileRequest) => {
    if (event?.type !== 'kindgi-files') return
    const call = typeof event.callId === 'number' ? inPiscina.get(event.callId) : undefined
    if (call?.state === 'running' && typeof event.nonce === 'string' && call.task.nonce === event.nonce) {
      options.onFileRequest(event)
    } else if (typeof event.port?.postMessage === 'function') {
      event.port.postMessage({ kind: 'error', message: 'The call has ended: its file token is no longer valid' })
      event.port.close()
    }
  })
  const aborts = new BroadcastChannel(abortChannel)
  aborts.unref()

  const holders = (): Holder[] => [...threads.values()].map((t) => ({ key: t, busyMs: () => t.performance.eventLoopUtilization().active }))
  const budget = createThreadBudget(options.workerThreads, holders)

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
    if (call.lone) keepAwake(AWAKE_FOR_NEXT_MS)
    clearTimeout(call.timer)
    inPiscina.delete(call.task.callId)
    call.ticket?.done()
    call.ticket = undefined
    call.resolveFreed()
  }

  // No task has a signal: Piscina runs a task with one alone on its worker, and a call must be
  // able to wait behind another. A worker is ended with its Worker's own terminate().
  function submit(call: Call): void {
    inPiscina.set(call.task.callId, call)
    lonely = inPiscina.size === 1 && oldestWaiting() === undefined ? lonely + 1 : 0
    call.lone = lonely >= LONE_STREAK
    if (call.lone) keepAwake(AWAKE_FOR_ANSWER_MS)
    const box = { call }
    call.task[CALL] = box
    // Through the box: a call taken back from a line leaves a stand-in in its place (withdraw).
    pool.run(call.task).then(
      (reply: WarmReply) => settled(box.call, reply),
      (err: unknown) => failed(box.call, err),
    )
    // Not from running(): that is the balancer's turn, before Piscina has posted this call's task.
    if (call.state === 'running' && call.stopped === undefined) refill(call)
  }

  /** Calls come one at a time: this thread stays awake for the next message, for `ms` from now. */
  function keepAwake(ms: number): void {
    awakeUntil = performance.now() + ms
    if (awake) return
    awake = true
    stayAwake(
      () => inPiscina.size > 1 || performance.now() > awakeUntil,
      () => (awake = false),
    )
  }

  /** The budget let the call start: on an idle worker. */
  function start(call: Call): void {
    if (call.state === 'ended') return
    call.state = 'running'
    call.behind = undefined
    // A turn for a call that waits behind none, too: its worker, idle to Piscina, may still be
    // posting the answer ahead, or held by what that call left running. Should it die first,
    // the call never ran and runs elsewhere; stopped first, it is taken back (withdraw).
    call.task.turn ??= turns.claim()
    submit(call)
  }

  /** Every core is taken: wait behind a call that just started on its worker and will not take long, if there is one. */
  function placeBehind(call: Call): boolean {
    if (!lineUp || call.task.files !== undefined) return false
    const now = performance.now()
    const threadId = lines.shortest((running, length) => {
      return running.state === 'running' && lineUpPolicy.mayWaitBehind(running.task.key, running.startedAt, length, now)
    })
    if (threadId === undefined || ending.has(threadId)) return false
    const slot = turns.claim()
    if (slot === undefined) return false
    goBehind(call, threadId, slot)
    return true
  }

  function goBehind(call: Call, threadId: number, slot: number): void {
    call.state = 'behind'
    call.behind = threadId
    call.task.turn = slot
    submit(call)
    // Behind one that turned out slow: taken back, to run on its own.
    call.timer = setTimeout(() => withdraw(call), BEHIND_MS)
  }

  /**
   * A call just started on its worker: the oldest call waiting in the budget joins its line, if
   * it may wait behind it. Under load a worker then always has its next call at hand when one
   * ends, and never parks between calls only to be woken for the next.
   */
  function refill(ahead: Call): void {
    const threadId = ahead.threadId
    if (!lineUp || closing || threadId === undefined || ending.has(threadId)) return
    for (let next = oldestWaiting(); next !== undefined; next = oldestWaiting()) {
      if (!lineUpPolicy.mayWaitBehind(ahead.task.key, ahead.startedAt, lines.length(threadId), performance.now())) return
      const slot = turns.claim()
      if (slot === undefined) return
      waiting.shift()
      if (next.task.files !== undefined || next.ticket?.cancel() !== true) {
        turns.release(slot)
        continue
      }
      next.ticket = undefined
      goBehind(next, threadId, slot)
    }
  }

  /**
   * Takes a call back from the line it waits in, unless its turn has come: it goes round again
   * (or ends, if stopped) at once, even while its worker is held by synchronous pack code. Its
   * task stays on that worker, and Piscina settles it (not-run) at its turn: a stand-in takes
   * its place in the line and in that settlement. A call first in line counts as running here
   * before its worker takes its turn (the worker may still be posting the answer ahead): one
   * stopped then is taken back too, and its budget place stays with the stand-in until the
   * worker is free. False if the turn had come.
   */
  function withdraw(call: Call): boolean {
    if ((call.state !== 'behind' && call.state !== 'running') || closing || call.task.turn === undefined || !turns.takeBack(call.task.turn)) return false
    clearTimeout(call.timer)
    const ticket = call.state === 'running' ? call.ticket : undefined
    if (ticket !== undefined) call.ticket = undefined
    const standIn: Call = { ...call, state: 'withdrawn', ticket, timer: undefined, resolveAnswer: () => undefined, resolveFreed: () => undefined }
    const box = call.task[CALL]
    if (box !== undefined) box.call = standIn
    if (call.threadId !== undefined) lines.replace(call.threadId, call, standIn)
    // First in line, nothing runs ahead of it on its worker (watchHeld).
    if (call.state === 'running' && standIn.threadId !== undefined) watchHeld(standIn)
    call.task = { ...call.task, turn: undefined, [CALL]: undefined }
    again(call)
    return true
  }

  /** A stand-in's task has settled (or its worker is gone): it gives back the budget place it may have been handed. */
  function standInDone(standIn: Call): void {
    clearTimeout(standIn.timer)
    standIn.state = 'ended'
    standIn.ticket?.done()
    standIn.ticket = undefined
  }

  /**
   * A task that is to run nothing (a stand-in, or a call stopped before it reached a worker) is
   * first in line on its worker: the worker settles it the moment it takes its turn. One that has
   * not within HELD_MS is held by what the call before left running, and is ended, or the task
   * would hold its place in the budget (and its worker) for good.
   */
  function watchHeld(call: Call): void {
    clearTimeout(call.timer)
    call.timer = setTimeout(() => endHeldWorker(call), HELD_MS)
  }

  function endHeldWorker(call: Call): void {
    const threadId = call.threadId
    if (call.state === 'ended' || closing || threadId === undefined || ending.has(threadId)) return
    ending.add(threadId)
    options.onReplaced(call.stopped ?? 'crash', call.id)
    void thread(threadId)?.terminate()
  }

  /** A call that never ran goes round again: with its budget place if it holds one, else through the budget. */
  function again(call: Call): void {
    call.behind = undefined
    call.threadId = undefined
    inPiscina.delete(call.task.callId)
    if (call.stopped !== undefined) {
      end(call, { kind: 'died', reason: 'crash', detail: 'it was stopped before it ran' })
      return
    }
    if (call.ticket !== undefined) {
      start(call)
      return
    }
    call.state = 'queued'
    call.ticket = budget.enqueue(() => start(call))
    wait(call)
  }

  /** The oldest call still waiting in the budget; those that left it (started, stopped) are dropped on the way. */
  function oldestWaiting(): Call | undefined {
    while (waiting.length > 0 && (waiting[0] as Call).state !== 'queued') waiting.shift()
    return waiting[0]
  }

  /** The call waits in the budget: a line may take it first. */
  function wait(call: Call): void {
    if (lineUp && call.state === 'queued') waiting.push(call)
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

  /** Told by the balancer, as Piscina posts the task: the call is on this worker from now, running or in line. */
  function reached(call: Call, threadId: number): void {
    call.threadId = threadId
    if (!lineUp) countReached(threadId, call.id)
    // Stopped while it waited for a worker: it goes as the balancer's choice (Piscina posts the task
    // after this), and the worker runs nothing of it.
    if (call.stopped !== undefined) call.task.withdrawn = true
    if (!lines.add(threadId, call)) return
    if (call.task.withdrawn === true) watchHeld(call)
    else running(call)
  }

  /** For the idle watch of a limited pool (unlimited pools keep no count). */
  function countReached(threadId: number, id: string): void {
    const seen = reachedOn.get(threadId)
    if (seen === undefined) reachedOn.set(threadId, { count: 1, id })
    else {
      seen.count++
      seen.id = id
    }
  }

  /** The call is the one its worker runs now. */
  function running(call: Call): void {
    // A stand-in: its worker answers not-run at its turn, and it passes its budget place on then.
    if (call.state === 'withdrawn') {
      watchHeld(call)
      return
    }
    if (call.state === 'behind') {
      call.state = 'running'
      clearTimeout(call.timer)
    }
    call.startedAt = performance.now()
    // Stopped in line, and its worker took it before the notice: it ends as a running call does.
    if (call.stopped !== undefined) {
      abortRunning(call, call.stopped)
      return
    }
    // In a limited pool, every call's busy time is its worker's to account for (the idle watch); cpuMs is measured by it.
    if (lineUp || call.threadId === undefined) return
    call.busyAtStart = thread(call.threadId)?.performance.eventLoopUtilization().active
    const cpuMs = call.entry?.cpuMs
    if (cpuMs === undefined) return
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

  /** The busy time (ms) of the calls that ran on this worker, the one it runs now included. */
  function callsBusyMs(threadId: number): number {
    const done = busyInCalls.get(threadId) ?? 0
    const now = lines.first(threadId)
    if (now?.state !== 'running' || now.busyAtStart === undefined) return done
    return done + (threads.get(threadId)?.performance.eventLoopUtilization().active ?? now.busyAtStart) - now.busyAtStart
  }

  /** Off its worker: its busy time is counted there, and the call in line behind it runs now, in its place in the budget. */
  function offWorker(call: Call): void {
    if (call.threadId === undefined) return
    if (call.busyAtStart !== undefined) {
      const active = threads.get(call.threadId)?.performance.eventLoopUtilization().active ?? call.busyAtStart
      busyInCalls.set(call.threadId, (busyInCalls.get(call.threadId) ?? 0) + active - call.busyAtStart)
      call.busyAtStart = undefined
    }
    const next = lines.remove(call.threadId, call)
    if (next === undefined) return
    if (next.ticket === undefined) {
      next.ticket = call.ticket
      call.ticket = undefined
      next.ticket?.handOver()
    }
    running(next)
    if (next.state === 'running' && next.stopped === undefined) refill(next)
  }

  /** Its task has settled: the turn slot it held may be given again. */
  function turnDone(call: Call): void {
    if (call.task.turn === undefined) return
    turns.release(call.task.turn)
    call.task.turn = undefined
  }

  function settled(call: Call, reply: WarmReply): void {
    turnDone(call)
    offWorker(call)
    if (call.state === 'withdrawn') {
      standInDone(call)
      return
    }
    // Stopped before it reached its worker, or its worker had retired: it ran nothing.
    if (reply?.kind === 'not-run') {
      again(call)
      return
    }
    const result = (reply as { result: CallResult }).result
    lineUpPolicy.took(call.task.key, performance.now() - call.startedAt)
    if (result.retire !== undefined && call.threadId !== undefined) retire(call.threadId, call.id, retireReason(result.retire))
    end(call, { kind: 'result', result })
  }

  function failed(call: Call, err: unknown): void {
    // A call that waited for its turn (behind, or first in line and not yet started) may or may
    // not have run: its worker can take its turn, run it and post its answer, and die before
    // this thread reads that answer, or die before it takes it. Its turn slot says which.
    const waitedTurn = (call.state === 'behind' || call.state === 'running') && call.task.turn !== undefined
    const tookTurn = waitedTurn && !turns.takeBack(call.task.turn as number)
    turnDone(call)
    if (call.state === 'withdrawn') {
      if (call.threadId !== undefined) lines.remove(call.threadId, call)
      standInDone(call)
      return
    }
    // On a worker this module ended, only the call it was ended for had run (the others reached it after, or waited behind).
    const ran = waitedTurn ? tookTurn : call.state === 'running' && (call.stopped !== undefined || call.threadId === undefined || !ending.has(call.threadId))
    if (call.threadId !== undefined) lines.remove(call.threadId, call)
    if (closing) {
      end(call, { kind: 'shutdown' })
      return
    }
    // It waited in line on a worker that died, or reached one another call had retired: it ran nothing.
    if (!ran) {
      // Failed by a worker that has not exited (its runner broke, pack code can do that): it
      // would fail the call again, and every call after it, so it is ended and replaced.
      const threadId = call.threadId
      const worker = threadId === undefined ? undefined : threads.get(threadId)
      if (threadId !== undefined && worker !== undefined && notExited.has(worker) && !ending.has(threadId)) {
        ending.add(threadId)
        diedOnce(threadId, () => options.onReplaced('crash', undefined))
        void worker.terminate()
      }
      again(call)
      return
    }
    if (call.stopped !== undefined) {
      // Its worker has exited now: the line says it was replaced as its slot becomes free.
      if (call.terminated) options.onReplaced(call.stopped, call.id)
      end(call, { kind: 'died', reason: 'crash', detail: 'its worker was terminated' })
      return
    }
    const death = describeDeath(err)
    if (!call.answered) diedOnce(call.threadId, () => options.onReplaced(death.reason, call.id))
    end(call, { kind: 'died', ...death })
  }

  /** A worker that died (or broke) with several calls on it is said to be replaced once, by the first of them to learn it. */
  function diedOnce(threadId: number | undefined, say: () => void): void {
    if (threadId !== undefined && saidDied.has(threadId)) return
    if (threadId !== undefined) saidDied.add(threadId)
    say()
  }

  function retire(threadId: number, id: string | undefined, reason: ReplaceReason): void {
    if (ending.has(threadId)) return
    ending.add(threadId)
    options.onReplaced(reason, id)
    void thread(threadId)?.terminate()
  }

  // A limited tool's code left running on its worker between calls is ended (idle-watch.ts).
  const idleWatch = lineUp
    ? undefined
    : watchIdleWorkers({
        workers: () => threads.values(),
        calls: (worker) => ({
          busy: lines.length(worker.threadId) > 0,
          ending: ending.has(worker.threadId),
          reached: reachedOn.get(worker.threadId)?.count ?? 0,
          callsBusyMs: callsBusyMs(worker.threadId),
        }),
        memMB: options.memMB,
        passed: (worker, limit) => {
          retire(worker.threadId, reachedOn.get(worker.threadId)?.id, limit)
          // Three within a minute, and the front holds the process back.
          if (limit === 'cpu') workerBurnt()
        },
      })

  /**
   * Piscina starts another worker at once, and code that burns outside calls (from its module's
   * top level, or a hook each call installs again) burns in it too: counted over a minute, not
   * reset by calls (a red-team pass: a call every 8 s kept 1.8 cores burning, never held back).
   */
  function workerBurnt(): void {
    const now = performance.now()
    burntAt = [...burntAt.filter((at) => now - at < BURNT_WINDOW_MS), now]
    options.onWorkersBurnt?.(burntAt.length)
  }

  /** Fires the running call's abortSignal; past the grace, its worker is terminated. */
  function abortRunning(call: Call, reason: StopReason): void {
    // Closing: the channel is closed and every worker is being ended, the call with it.
    if (closing) return
    aborts.postMessage({ callId: call.task.callId, reason: reason === 'cancelled' ? 'cancelled' : 'deadline', nonce: call.task.nonce } satisfies AbortNotice)
    clearTimeout(call.timer)
    call.timer = setTimeout(() => terminate(call, reason), ABORT_GRACE_MS)
  }

  /** Ends the running call's worker; Piscina sees it exit and rejects its tasks. */
  function terminate(call: Call, reason: StopReason): void {
    if (call.state !== 'running') return
    call.stopped ??= reason
    clearTimeout(call.timer)
    // Still in Piscina's queue, waiting for a worker to start: it will run nothing (reached()), and no worker is replaced.
    if (call.threadId === undefined) return
    ending.add(call.threadId)
    call.terminated = true
    void thread(call.threadId)?.terminate()
  }

  function run(task: CallTask): RunningCall {
    let resolveAnswer!: (answer: GroupAnswer) => void
    const answered = new Promise<GroupAnswer>((resolve) => (resolveAnswer = resolve))
    let resolveFreed!: () => void
    const freed = new Promise<void>((resolve) => (resolveFreed = resolve))
    const call: Call = {
      task: { ...task, nonce: randomUUID() },
      entry: byKey.get(task.key),
      id: replacedId(task.key),
      state: 'queued',
      answered: false,
      ticket: undefined,
      stopped: undefined,
      terminated: false,
      behind: undefined,
      threadId: undefined,
      startedAt: 0,
      busyAtStart: undefined,
      timer: undefined,
      lone: false,
      resolveAnswer,
      resolveFreed,
    }
    if (closing) end(call, { kind: 'shutdown' })
    // While others wait in the budget a newcomer queues after them rather than take a line's place first.
    else if (budget.full() && oldestWaiting() === undefined && placeBehind(call)) {
      // In line on a worker; it runs in the budget place of the call ahead of it.
    } else {
      call.ticket = budget.enqueue(() => start(call))
      wait(call)
    }

    const stop = (reason: StopReason): void => {
      if (call.state === 'ended' || call.stopped !== undefined) return
      if (call.state === 'queued') {
        call.ticket?.cancel()
        call.ticket = undefined
        end(call, { kind: 'died', reason: 'crash', detail: 'it was stopped before it ran' })
        return
      }
      call.stopped = reason
      // Still waiting for its turn (behind, or first in line and not yet taken): it runs nothing.
      if (withdraw(call) || call.state === 'behind') return
      if (reason === 'cpu') {
        terminate(call, reason)
        return
      }
      abortRunning(call, reason)
    }
    return { answer: answered, freed, stop }
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
      idleWatch?.stop()
      waiting = []
      budget.close()
      aborts.close()
      await pool.destroy()
    },
  }
}
