// A warm group (`none`, `context-isolated`) as the front sees it: its Piscina pool runs in a
// pack process of its own (workers/pack-process.ts), so pack code there can end, forge or
// read nothing of the front (issue 16). Modelled on Temporal's WorkerThreadClient: one map of
// the calls pending in a process, one message handler, one exit handler that settles every
// call still pending; and on undici's rule that every call ends exactly once. A process that
// dies is replaced (its modules loaded again) and its calls are answered as exited; the front,
// its probes and every other call go on. A message names a call; the front acts on it only
// when that call is pending in the process that sent it.
import { spawn, type ChildProcess } from 'node:child_process'
import { randomUUID } from 'node:crypto'
import { dirname } from 'node:path'
import type { Readable, Writable } from 'node:stream'
import { fileURLToPath } from 'node:url'
import { fileReplyAcross, openFrames, type FrameChannel } from '../protocol/frame-channel.js'
import type { FromPack, FromPackItem, PackSetup, ToPack, ToPackItem } from '../protocol/pack-messages.js'
import type { CallTask } from '../protocol/worker-messages.js'
import { checkedAnswer, replacedId, type GroupOptions, type RunningCall, type WorkerGroup } from './group.js'
import type { GroupAnswer, ReplaceReason, StopReason } from '../protocol/call-answers.js'
import { packProcessCommand, type WarmWalls } from './strict-flags.js'
import { type HelperCpuWatch, watchHelperCpu } from './helper-cpu-watch.js'
import { watchThreads, type ThreadWatch } from './thread-watch.js'
import { passLines } from './pack-output.js'
import { whenEnded } from './process-end.js'
import { CHANNEL_RATE, createReadRate, MIN_MESSAGE_CHARGE, type ReadRate } from './read-rate.js'
import { isRequestNumber } from '../protocol/file-request-bounds.js'
import { unsealedLine } from '../protocol/line-seal.js'
import { bridgeFileRequest, MAX_FILE_REQUESTS_PER_CALL } from './tool-files.js'
import type { FileReply } from '../protocol/worker-messages.js'

// Bundled at build, like the workers: a replacement process loads one file.
const PACK_PROCESS = fileURLToPath(new URL('../../workers/bundled/pack-process.js', import.meta.url))
/**
 * Its working folder: under the permission model a worker thread may read what lies below its
 * process's working folder, where the process itself may not (stop 33: a service started in its
 * token file's folder, or in /, had warm calls read the token). Our bundles' folder holds
 * nothing the process may not read anyway.
 */
const WORKING_FOLDER = dirname(PACK_PROCESS)

/** A process that dies sooner than this after its start counts towards the restart backoff. */
const SHORT_LIFE_MS = 2_000
const MAX_RESTART_DELAY_MS = 5_000
/**
 * Workers ended within a minute for CPU no call accounts for (idle-watch.ts) before the process
 * is killed and held back: Piscina starts another worker at once, and code that burns outside
 * calls (from its module's top level, or a hook each call installs) burned in it again, a core
 * or more, for good (red-team passes, stops 38 and 39). Held back 5 s the first time, twice as
 * long each time after, to a minute, until one of its processes lives HELD_BACK_FORGOTTEN_MS
 * (calls do not reset it: one every 8 s did, and the process was never held back).
 */
const BURNT_WORKERS = 3
const HOLD_BACK_MS = 5_000
const MAX_HOLD_BACK_MS = 60_000
const HELD_BACK_FORGOTTEN_MS = 120_000
const CLOSE_GRACE_MS = 5_000
/** How long a stopped call's process may take to free it (its own grace to terminate the worker, and more) before it is ended. */
const STOP_GRACE_MS = 2_000
/** The same for a call its process answered with an error (a limit it enforces, a worker it retires): its worker exits first. */
const FAILED_FREE_GRACE_MS = 5_000
/** How long what a process wrote before it exited may take to be read, before its pipes are closed. */
const EXIT_DRAIN_MS = 1_000
const REASONS = new Set<unknown>(['deadline', 'cancelled', 'memory', 'cpu', 'crash', 'strict', 'context-isolated'] satisfies ReplaceReason[])

/** Where pack processes started from now on write their stdout: the service's own, or its stderr (`check`, whose stdout is its report). */
let packStdout: 1 | 2 = 1
export function packStdoutToStderr(on: boolean): void {
  packStdout = on ? 2 : 1
}

export type PackProcessOptions = GroupOptions & {
  minThreads: number
  /** Calls that may compute on the process's worker threads at once. */
  workerThreads: number
  /** The program to run instead of the built pack process (tests). */
  entry?: string
  /** What its pack code may not read or write, and whether it may change modes (strict-flags.ts warmWalls). */
  walls: WarmWalls
}

type Pending = { id: string; answered: boolean; answer(answer: GroupAnswer): void; freed(): void }

/**
 * Why the front killed a process: the reason and the tool its worker-replaced line names
 * (undefined: the call in flight, else the last that ended); `answerAs`: its calls in flight
 * are answered as past that limit, and `detail` says why to the others; `holdBack`: its
 * workers kept burning (BURNT_WORKERS), or its helper threads spent past its calls' cpuMs, and
 * the next process waits longer to start.
 */
type KilledFor = { reason: ReplaceReason; id?: string; answerAs?: 'memory' | 'cpu'; detail?: string; holdBack?: true }

type Proc = {
  child: ChildProcess | undefined
  /** Its end of the channel (fd 3 of the pack process). */
  channel: FrameChannel<ToPack> | undefined
  /** Calls sent to (or queued for) this process and not yet freed, by call id. */
  pending: Map<number, Pending>
  outbox: ToPackItem[]
  /** Called once the outbox's items have left the front (file replies hold their call's place until then). */
  outboxWritten: Array<() => void>
  flushing: boolean
  workers: number
  startedAt: number
  gone: boolean
  exited: Promise<void>
  markExited(): void
  probes: Array<{ resolve(problems: string[]): void; reject(err: Error): void }>
  threads: ThreadWatch | undefined
  /** Its helper threads' CPU (libuv's pool, V8's) against its calls' cpuMs (tools with cpuMs). */
  helperCpu: HelperCpuWatch | undefined
  /** Why the front killed it, once it has (killFor): the first reason stands. */
  killedFor: KilledFor | undefined
  /** The last call of the process that ended, for that line. */
  lastId: string | undefined
  secret: string
  /** What the front fetches and encodes for its file requests, at the channel's rate (read-rate.ts). */
  files: ReadRate
  /** When its next file request may be taken up, once its rate is in debt. */
  filesFreeAt: number
  /** File requests waiting for the rate, in their order, how many of them each call has, and the one timer that takes them up again. */
  filesWaiting: Array<Extract<FromPackItem, { type: 'files' }>>
  filesWaitingOf: Map<number, number>
  filesTimer: NodeJS.Timeout | undefined
}

/** File requests of one pack process that may wait for its rate (each call's at most MAX_FILE_REQUESTS_PER_CALL). */
const MAX_FILES_WAITING = 256

export function createPackProcessGroup(options: PackProcessOptions): WorkerGroup {
  const setup: PackSetup = {
    key: options.key,
    entries: options.entries,
    memMB: options.memMB,
    maxThreads: options.maxThreads,
    minThreads: options.minThreads,
    workerThreads: options.workerThreads,
    countThreads: false,
    secret: '',
  }
  // Tools that all have limits: no thread of pack code's may outlive a call (thread-watch.ts).
  const limited = options.entries.length > 0 && options.entries.every((e) => e.cpuMs !== undefined || e.memMB !== undefined)
  const limitReason: ReplaceReason = options.entries.every((e) => e.cpuMs !== undefined) ? 'cpu' : 'memory'
  // Tools that all have cpuMs: the CPU their calls hand to libuv's pool and V8's threads is theirs too (helper-cpu-watch.ts).
  const helperCpuLimited = limitReason === 'cpu' && limited
  const cpuMsOf = new Map(options.entries.map((e) => [e.key, e.cpuMs]))
  const networkNone = options.entries.length > 0 && options.entries.every((e) => e.networkNone)
  const entry = options.entry ?? PACK_PROCESS
  const entryIds = new Set(options.entries.map((e) => replacedId(e.key)))
  let closed = false
  let shortLives = 0
  /** Processes held back in a row (BURNT_WORKERS), none of them living HELD_BACK_FORGOTTEN_MS. */
  let heldBackTimes = 0
  let launches = 0
  let current = newProc(0)

  function newProc(delayMs: number): Proc {
    let markExited!: () => void
    const proc: Proc = {
      child: undefined,
      channel: undefined,
      pending: new Map(),
      outbox: [],
      outboxWritten: [],
      flushing: false,
      workers: 0,
      startedAt: performance.now(),
      gone: false,
      exited: new Promise<void>((resolve) => (markExited = resolve)),
      markExited: () => markExited(),
      probes: [],
      threads: undefined,
      helperCpu: undefined,
      killedFor: undefined,
      lastId: undefined,
      secret: randomUUID(),
      files: createReadRate(CHANNEL_RATE, 2 * CHANNEL_RATE),
      filesFreeAt: 0,
      filesWaiting: [],
      filesWaitingOf: new Map(),
      filesTimer: undefined,
    }
    if (delayMs === 0) launch(proc)
    else setTimeout(() => launch(proc), delayMs).unref()
    return proc
  }

  function launch(proc: Proc): void {
    if (closed) {
      exitedProc(proc, 'the group closed')
      return
    }
    const [command, ...args] = packProcessCommand(entry, networkNone, options.walls)
    let child: ChildProcess
    try {
      // Its channel: our messages on its stdin, its own on its fd 3 (workers/fd-channel.ts).
      child = spawn(command as string, args, { env: options.env, cwd: WORKING_FOLDER, stdio: ['pipe', 'pipe', 'pipe', 'pipe'] })
      // Its stdout and stderr reach the service's as whole lines, never its own (pack-output.ts).
      passLines(child.stdout as Readable, packStdout, { pid: child.pid, stream: 'stdout' })
      passLines(child.stderr as Readable, 2, { pid: child.pid, stream: 'stderr' })
    } catch (err) {
      // Not from here: a launch runs inside newProc, before the group holds the process as its
      // current one (at the group's first, before `current` exists), and its end, taken then,
      // started no other: the group stayed dead, or the front threw at boot (a red-team pass,
      // stop 42, with a command line made too long to start: E2BIG).
      const why = `it could not be started: ${(err as Error).message}`
      setImmediate(() => exitedProc(proc, why))
      return
    }
    proc.child = child
    const onFrame = (message: FromPack) => onMessage(proc, message)
    // Past EXIT_DRAIN_MS after its exit, its pipes are closed whoever holds them (process-end.ts).
    const end = whenEnded(child, (code, signal) => exitedProc(proc, signal ?? `code ${code}`), EXIT_DRAIN_MS)
    // A channel that says what the host never sends (a line past the limit, not JSON) is pack
    // code writing on it: nothing more of it is read; end the process, whose end answers its calls.
    const broken = () => {
      end.channelClosed()
      child.kill('SIGKILL')
    }
    // Only lines the process's own code sealed are read: pack code writes on the same fd.
    const unseal = (line: string) => unsealedLine(proc.secret, line)
    proc.channel = openFrames<FromPack, ToPack>(child.stdio[3] as Readable, child.stdin as Writable, onFrame, end.channelClosed, broken, unseal)
    proc.startedAt = performance.now()
    // 'error' is also a failed kill or write: make sure the process is gone; its close settles.
    child.on('error', () => {
      if (child.pid === undefined) exitedProc(proc, 'it could not be started')
      else child.kill('SIGKILL')
    })
    if (limited && child.pid !== undefined) {
      const pid = child.pid
      // Its worker-replaced line names the limit the thread escaped and the call that ended last.
      proc.threads = watchThreads(
        pid,
        () => queue(proc, { type: 'count-threads' }),
        (why, trip) =>
          killFor(proc, trip === 'memory' ? { reason: 'memory', answerAs: 'memory', detail: `killed: ${why}` } : { reason: limitReason, id: proc.lastId }),
        options.memMB,
      )
    }
    if (helperCpuLimited && child.pid !== undefined) {
      // Held back as burning workers are: a process started again at once came with fresh credit, and
      // one that kept handing CPU off was killed every 2 s and burned 1.2 cores (stop 40's second pass).
      proc.helperCpu = watchHelperCpu(child.pid, (why) => killFor(proc, { reason: 'cpu', answerAs: 'cpu', detail: `killed: ${why}`, holdBack: true }))
    }
    send(proc, { type: 'setup', setup: { ...setup, countThreads: proc.threads !== undefined, secret: proc.secret } })
    // A replacement loads its modules again before its calls, as the boot probe did.
    if (launches++ > 0) {
      proc.probes.push({ resolve: () => undefined, reject: () => undefined })
      send(proc, { type: 'probe' })
    }
    if (proc.outbox.length > 0) flush(proc)
  }

  function send(proc: Proc, message: ToPack, written?: () => void): void {
    // A process that died before the write: its exit answers its calls.
    if (proc.channel === undefined) written?.()
    else proc.channel.send(message, written)
  }

  /** `written`: called once the item has left the front, or never will. */
  function queue(proc: Proc, item: ToPackItem, written?: () => void): void {
    proc.outbox.push(item)
    if (written !== undefined) proc.outboxWritten.push(written)
    if (proc.flushing) return
    proc.flushing = true
    setImmediate(() => flush(proc))
  }

  /** Calls (and stops, replies) queued in one turn of the event loop go as one message. */
  function flush(proc: Proc): void {
    proc.flushing = false
    // Not started yet (a restart waits): what is queued goes once it is (launch).
    if (proc.child === undefined || proc.outbox.length === 0) return
    const items = proc.outbox
    const written = proc.outboxWritten
    proc.outbox = []
    proc.outboxWritten = []
    send(
      proc,
      { type: 'batch', items },
      written.length === 0
        ? undefined
        : () => {
            for (const done of written) done()
          },
    )
  }

  function onMessage(proc: Proc, message: FromPack): void {
    if (proc.gone) return
    if (message?.type === 'batch' && Array.isArray(message.items)) {
      for (const item of message.items) onItem(proc, item)
    } else if (message?.type === 'probed') {
      const problems = Array.isArray(message.problems) ? message.problems.filter((p): p is string => typeof p === 'string') : []
      for (const probe of proc.probes.splice(0)) probe.resolve(problems)
    } else if (message?.type === 'probe-failed') {
      const why = typeof message.message === 'string' ? message.message : 'the pack process could not load its modules'
      for (const probe of proc.probes.splice(0)) probe.reject(new Error(why))
    } else if (message?.type === 'threads-base' && proc.threads?.readBase() === true) {
      // Answered once: pack code that writes it again restarts nothing and is read as nothing.
      send(proc, { type: 'threads-counted' })
    }
  }

  function onItem(proc: Proc, item: FromPackItem): void {
    switch (item?.type) {
      case 'answer': {
        const call = proc.pending.get(item.callId)
        if (call === undefined || call.answered) return
        call.answered = true
        const answer = checkedAnswer(item.answer)
        call.answer(answer)
        // An error result whose worker stays busy is a cpuMs end (the pack process terminates it); a handler's throw frees at once.
        if (answer.kind !== 'result' || answer.result.outcome !== 'ok')
          freeWithinGrace(proc, item.callId, call, FAILED_FREE_GRACE_MS, answer.kind === 'died' ? answer.reason : 'cpu')
        return
      }
      case 'freed': {
        const call = proc.pending.get(item.callId)
        if (call === undefined) return
        proc.pending.delete(item.callId)
        proc.helperCpu?.close(item.callId)
        settle(call, { kind: 'died', reason: 'crash', detail: 'it was stopped' })
        proc.lastId = call.id
        proc.threads?.check()
        return
      }
      case 'workers-burnt':
        if (!Number.isInteger(item.times) || item.times < BURNT_WORKERS) return
        killFor(proc, {
          reason: 'cpu',
          holdBack: true,
          detail: `killed: its workers were ended for CPU no call accounted for ${item.times} times within a minute`,
        })
        return
      case 'threads':
        if (Number.isInteger(item.live) && item.live >= 0) proc.threads?.counted(item.live)
        return
      case 'replaced':
        // Only what the host says: a reason it knows, an entry of this group (log lines and metric labels).
        if (REASONS.has(item.reason)) options.onReplaced(item.reason, typeof item.id === 'string' && entryIds.has(item.id) ? item.id : undefined)
        return
      case 'files':
        fileRequest(proc, item)
        return
      case 'workers':
        if (Number.isInteger(item.count) && item.count >= 0) proc.workers = Math.min(item.count, options.maxThreads)
        return
    }
  }

  /**
   * A call its pack process ended (cpuMs, memMB) is freed once its worker has exited. A worker in
   * native code (crypto.pbkdf2Sync) cannot be terminated before that returns: it held its core,
   * and the call its slot in the service's cap, for as long (minutes; a red-team pass, stop 35).
   * Past the grace, the process is ended, as for a call the front stopped.
   */
  function freeWithinGrace(proc: Proc, callId: number, call: Pending, graceMs: number, reason: ReplaceReason): void {
    setTimeout(() => {
      if (proc.pending.get(callId) !== call) return
      // Its worker-replaced line names this call and why, not whichever call was pending first.
      killFor(proc, { reason, id: call.id })
    }, graceMs).unref()
  }

  /** Kills the process for a limit it passed; its exit answers its calls (exitedProc). The first reason stands. */
  function killFor(proc: Proc, why: KilledFor): void {
    proc.killedFor ??= why
    proc.child?.kill('SIGKILL')
  }

  /** Ends a call that has not been answered yet with `answer`, and frees it: once, whatever comes. */
  function settle(call: Pending, answer: GroupAnswer): void {
    if (!call.answered) {
      call.answered = true
      call.answer(answer)
    }
    call.freed()
  }

  function exitedProc(proc: Proc, why: string): void {
    if (proc.gone) return
    proc.gone = true
    proc.workers = 0
    clearTimeout(proc.filesTimer)
    proc.filesWaiting = []
    proc.filesWaitingOf.clear()
    proc.threads?.stop()
    proc.helperCpu?.stop()
    proc.markExited()
    // What never left for it never will: file replies among it free their calls' places.
    proc.outbox = []
    for (const written of proc.outboxWritten.splice(0)) written()
    const died = [...proc.pending.values()]
    proc.pending.clear()
    for (const probe of proc.probes.splice(0)) probe.reject(new Error(`its pack process exited (${why})`))
    const inFlight = died.find((call) => !call.answered)
    // Ended by the service closing its groups, not by pack code: the calls were cut by the shutdown.
    const reason = proc.killedFor?.answerAs ?? 'crash'
    const detail = proc.killedFor?.detail ?? why
    for (const call of died) settle(call, closed ? { kind: 'shutdown' } : { kind: 'died', reason, detail })
    if (closed || proc !== current) return
    if (proc.killedFor !== undefined) options.onReplaced(proc.killedFor.reason, proc.killedFor.id ?? inFlight?.id ?? proc.lastId)
    else options.onReplaced('crash', inFlight?.id ?? died[0]?.id)
    // A process that keeps dying as it starts is restarted less and less often.
    const lived = performance.now() - proc.startedAt
    shortLives = lived < SHORT_LIFE_MS ? shortLives + 1 : 0
    if (lived >= HELD_BACK_FORGOTTEN_MS) heldBackTimes = 0
    const delay = proc.killedFor?.holdBack
      ? Math.min(MAX_HOLD_BACK_MS, HOLD_BACK_MS * 2 ** heldBackTimes++)
      : shortLives <= 1
        ? 0
        : Math.min(MAX_RESTART_DELAY_MS, 100 * 2 ** (shortLives - 2))
    current = newProc(delay)
  }

  /**
   * A file request is honoured only for a call pending in the process that asks, and at the
   * process's rate: the front fetches, encodes and writes each reply on its one thread, and a warm
   * call that kept four reads of 10 MiB in flight took 0.85 of its core (a red-team pass, stop 42).
   * Past the rate, requests wait their turn in a line, as a strict process's do in its channel;
   * past as many in that line as a call may have in flight, or MAX_FILES_WAITING in all, they
   * answer busy, as the runtime does without room: one call that asked 28,000 times a second kept
   * a line of the process's alone full, and other tenants' reads answered busy (stop 42's second pass).
   */
  function fileRequest(proc: Proc, item: Extract<FromPackItem, { type: 'files' }>): void {
    if (!isRequestNumber(item.req)) return
    const ofCall = proc.filesWaitingOf.get(item.callId) ?? 0
    if (ofCall >= MAX_FILE_REQUESTS_PER_CALL || proc.filesWaiting.length >= MAX_FILES_WAITING) {
      queue(proc, { type: 'file-reply', req: item.req, reply: { kind: 'ok', value: { busy: true } } })
      return
    }
    proc.filesWaitingOf.set(item.callId, ofCall + 1)
    proc.filesWaiting.push(item)
    takeFileRequests(proc)
  }

  /** Takes up the waiting file requests the rate has room for; one timer for the rest. */
  function takeFileRequests(proc: Proc): void {
    while (proc.filesWaiting.length > 0 && !proc.gone && proc.filesTimer === undefined) {
      const waitMs = proc.filesFreeAt - performance.now()
      if (waitMs > 0) {
        proc.filesTimer = setTimeout(() => {
          proc.filesTimer = undefined
          takeFileRequests(proc)
        }, waitMs)
        return
      }
      const item = proc.filesWaiting.shift() as Extract<FromPackItem, { type: 'files' }>
      const left = (proc.filesWaitingOf.get(item.callId) ?? 1) - 1
      if (left === 0) proc.filesWaitingOf.delete(item.callId)
      else proc.filesWaitingOf.set(item.callId, left)
      startFileRequest(proc, item)
    }
  }

  function startFileRequest(proc: Proc, item: Extract<FromPackItem, { type: 'files' }>): void {
    chargeFiles(proc, MIN_MESSAGE_CHARGE)
    const reply = (message: FileReply) => {
      const across = fileReplyAcross(message)
      chargeFiles(proc, across.kind === 'ok' && 'bytes64' in across.value ? String(across.value.bytes64).length : 0)
      return new Promise<void>((written) => queue(proc, { type: 'file-reply', req: item.req, reply: across }, written))
    }
    if (!proc.pending.has(item.callId)) {
      void reply({ kind: 'error', message: 'The call has ended: its file token is no longer valid' })
      return
    }
    bridgeFileRequest(options.onFileRequest, item.callId, item, reply)
  }

  function run(task: CallTask): RunningCall {
    const proc = current
    let resolveAnswer!: (answer: GroupAnswer) => void
    const answer = new Promise<GroupAnswer>((resolve) => (resolveAnswer = resolve))
    let resolveFreed!: () => void
    const freed = new Promise<void>((resolve) => (resolveFreed = resolve))
    const call: Pending = { id: replacedId(task.key), answered: false, answer: resolveAnswer, freed: resolveFreed }
    if (proc.gone) {
      settle(call, { kind: 'died', reason: 'crash', detail: 'its pack process had exited' })
    } else {
      proc.pending.set(task.callId, call)
      const cpuMs = proc.helperCpu === undefined ? undefined : cpuMsOf.get(task.key)
      if (cpuMs !== undefined) proc.helperCpu?.open(task.callId, cpuMs)
      queue(proc, { type: 'call', task })
    }
    const stop = (reason: StopReason) => {
      if (call.answered || proc.pending.get(task.callId) !== call) return
      queue(proc, { type: 'stop', callId: task.callId, reason })
      // The slot must not wait on a process that does not free it: past the grace, end the process.
      freeWithinGrace(proc, task.callId, call, STOP_GRACE_MS, reason)
    }
    // cpuMs is measured and enforced in the pack process, which owns the Worker objects.
    return { answer, freed, stop }
  }

  function chargeFiles(proc: Proc, chars: number): void {
    const waitMs = proc.files.spend(chars)
    if (waitMs > 0) proc.filesFreeAt = performance.now() + waitMs
  }

  return {
    key: options.key,
    entries: options.entries,
    probe() {
      const proc = current
      if (proc.gone) return Promise.reject(new Error('its pack process exited'))
      return new Promise<string[]>((resolve, reject) => {
        proc.probes.push({ resolve, reject })
        send(proc, { type: 'probe' })
      })
    },
    run,
    workerCount: () => current.workers,
    // Calls of a pack process are budgeted by its own thread budget, not the front's.
    holders: () => [],
    async close() {
      closed = true
      const proc = current
      if (proc.child === undefined) {
        exitedProc(proc, 'the group closed')
        return
      }
      send(proc, { type: 'close' })
      const timer = setTimeout(() => proc.child?.kill('SIGKILL'), CLOSE_GRACE_MS)
      if (proc.channel?.open() !== true) proc.child.kill('SIGKILL')
      await proc.exited
      clearTimeout(timer)
    },
  }
}
