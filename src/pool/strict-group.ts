// The strict posture (issue 16): every call runs in a process of its own, killed after it, so
// nothing of another call (memory, descriptors, shared buffers, channels, V8 flags) and nothing
// of the front (token, sockets) can be reached from it. Processes are started ahead as spares
// (Node started, guards in, no pack code yet) so a call does not wait for a start. What the
// process may do is in strict-flags.ts; its CPU time and memory are read from outside it.
import { fileURLToPath } from 'node:url'
import type { CallTmp } from './call-tmp.js'
import { fileReplyAcross } from '../protocol/frame-channel.js'
import { DOORBELL, FROM_STRICT_TYPES, type FromStrict, type ToStrict } from '../protocol/strict-messages.js'
import { type RunnableEntry, runnerTraits } from '../protocol/runnable-entry.js'
import type { CallTask } from '../protocol/worker-messages.js'
import { ABORT_GRACE_MS, checkedAnswer, type GroupOptions, type RunningCall, type WorkerGroup, replacedId } from './group.js'
import type { GroupAnswer, StopReason } from '../protocol/call-answers.js'
import { cpuTimeMs, dataBytes } from './proc-stat.js'
import { spareTarget } from './spare-sizing.js'
import { type Exit, type SendOptions, type Spawned, startProcess } from './spawner/spawner.js'
import { callFolderEnv, strictCommand } from './strict-flags.js'
import { isRequestNumber } from '../protocol/file-request-bounds.js'
import { bridgeFileRequest } from './tool-files.js'

// Bundled at build, like the pooled worker: what a strict call waits for is a start. As
// CommonJS: an ES module entry makes Node build an ES module facade for every builtin it
// imports (node:fs's reads its lazy getters and loads the streams), and a strict process pays
// its start once per call (bench/PROFILE.md, seventh pass).
const STRICT_PROCESS = fileURLToPath(new URL('../../workers/bundled/strict-process.cjs', import.meta.url))

/** `sources`: with --watch, the pack's files as the boot read them, which its processes load (workers/pinned-sources.ts). */
export type StrictOptions = GroupOptions & { readRoots: string[]; callTmp: CallTmp; sources?: Readonly<Record<string, string>> }

type Spare = {
  child: Spawned
  /** Its call's ctx.tmpDir: the one folder its flags let it read and write, made before it started. */
  folder: string
  /** Resolves once the process waits for its call: [] then, else why it never will. */
  ready: Promise<string[]>
}

export function createStrictGroup(options: StrictOptions): WorkerGroup {
  const spares: Spare[] = []
  /** Every process of the group, spare or holding a call, and its end. */
  const live = new Set<Spawned>()
  /** Processes holding a call (spares excluded): what the thread budget samples. */
  const calling = new Set<Spawned>()
  const recentCalls: number[] = []
  // What every spare is told before its call, the same for all of them and small whatever the
  // pack's size: a call brings the one entry it runs.
  const traits = runnerTraits(options.entries)
  const entryOf = new Map(options.entries.map((e) => [e.key, e]))
  const networkNone = traits.networkGuard
  let dataBaseline: number | undefined
  let startMsAverage = 30
  let closed = false

  function spawnSpare(): Spare {
    const started = performance.now()
    const { folder, root } = options.callTmp.reserve()
    const [command, ...args] = strictCommand(STRICT_PROCESS, {
      readRoots: options.readRoots,
      networkNone,
      memMB: options.memMB,
      dataBaseline,
    })
    // Its folder is made by the spawner before it starts, its setup written as it starts, and it
    // is ended by the spawner once it has answered.
    const setup: ToStrict = options.sources === undefined ? { type: 'setup', traits } : { type: 'setup', traits, sources: options.sources }
    const child = startProcess(command as string, args, callFolderEnv(folder, options.env), {
      folder,
      root,
      first: setup,
      endAfter: 'result',
      types: FROM_STRICT_TYPES,
    })
    live.add(child)
    void child.exited.then(() => {
      live.delete(child)
      // A spare that died waiting (its spawner gone, killed from outside) must not take a call.
      const waiting = spares.findIndex((spare) => spare.child === child)
      if (waiting === -1) return
      spares.splice(waiting, 1)
      // Later, not at once: a spawner that cannot start processes must not spin.
      setTimeout(topUp, 100).unref()
    })
    const ready = new Promise<string[]>((resolve) => {
      const off = child.onMessage((event) => {
        if ((event as FromStrict).type !== 'spare-ready') return
        off()
        startMsAverage = startMsAverage * 0.8 + (performance.now() - started) * 0.2
        resolve([])
      })
      void child.exited.then(({ code, signal, notStarted }) =>
        resolve([
          notStarted === undefined
            ? `A strict process exited (${signal ?? `code ${code}`}) before it was ready`
            : `A strict process did not start: ${notStarted}`,
        ]),
      )
    })
    return { child, folder, ready }
  }

  function topUp(): void {
    if (closed) return
    const target = Math.min(spareTarget(recentCalls, performance.now(), startMsAverage), options.maxThreads)
    while (spares.length < target) spares.push(spawnSpare())
  }

  function run(task: CallTask): RunningCall {
    recentCalls.push(performance.now())
    const id = replacedId(task.key)
    let settled = false
    let child: Spawned | undefined
    let killedFor: StopReason | 'strict' | 'memory' | undefined
    let cpuAtStart: number | undefined
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

    /** The call has gone to its process: from here pack code may be running. */
    let sent = false

    // The service closed its groups: the call ends with it, sent nowhere and never budgeted.
    if (closed) {
      resolveAnswer({ kind: 'shutdown' })
      resolveFreed()
      return { answer, freed, stop: () => undefined, busyMs: () => undefined }
    }
    const ticket = options.budget.enqueue(() => {
      // The service closed its groups meanwhile: the call ends with it, and is sent nowhere.
      if (closed) return endUnsent({ kind: 'shutdown' })
      const spare = spares.shift() ?? spawnSpare()
      // A start costs tens of ms of CPU: with a spare left, start the next one after this call
      // instead of beside it, so the call does not share its core with a start.
      if (spares.length === 0) topUp()
      else void freed.then(topUp)
      take(spare)
      // Tenants take turns for the cores: one tenant's burst does not hold back another's call.
    }, task.ids.tenantId)

    /** Ends a call no process took: its answer, then its place in the budget. */
    function endUnsent(given: GroupAnswer): void {
      resolveAnswer(given)
      ticket.done()
      resolveFreed()
    }

    /** The spare is the call's from here: it gets the call once it is ready. */
    function take(spare: Spare): void {
      const c = spare.child
      child = c
      calling.add(c)
      c.onMessage((message) => {
        const event = message as FromStrict
        if (event.type === 'files') fileRequest(c, task.callId, event)
        else if (event.type === 'result' && !settled) {
          // The spawner ends the process as it relays this (endAfter): nothing to send for it.
          const given = checkedAnswer({ kind: 'result', result: event.result })
          resolveAnswer(given)
          killedFor = given.kind === 'result' && given.result.retire === 'memory' ? 'memory' : 'strict'
          // Killed before this came, it runs nothing more: its caller's next call, sent the moment
          // this answer reaches it, finds the slot free (a balancer with as many connections as
          // the cap was refused otherwise). Its core stays taken in the budget until it has exited.
          resolveFreed()
        }
      })
      void c.exited.then(({ code, signal, unreadable, notStarted }: Exit) => {
        calling.delete(c)
        // Ended by the service closing its groups (a shutdown past its drain), not by pack code.
        if (closed && killedFor === undefined) resolveAnswer({ kind: 'shutdown' })
        // Its folder could not be made: no process started, nothing ran, and the caller may send it again.
        else if (notStarted !== undefined) resolveAnswer({ kind: 'not-started', why: notStarted })
        else if (killedFor !== undefined) options.onReplaced(killedFor, id)
        else {
          const memory = outOfMemory(options.memMB, code, signal)
          options.onReplaced(memory ? 'memory' : 'crash', id)
          const detail = unreadable
            ? 'killed for its channel: it wrote what is no message (not JSON, a line over 16 MiB as an answer that large is, or of a type it may not send), or left 64 MiB unread'
            : (signal ?? `code ${code}`)
          // Never sent its call: nothing of it ran, and the caller may send it again.
          if (!sent) resolveAnswer({ kind: 'not-started', why: `its process exited (${detail}) before it took the call` })
          else resolveAnswer({ kind: 'died', reason: memory ? 'memory' : 'crash', detail })
        }
        // The answer before the release: the call's owner takes them in that order (call-life.ts).
        ticket.done()
        resolveFreed()
      })
      void spare.ready.then((problems) => {
        // Ended before it was ready: its exit answers the call (not started).
        if (settled || killedFor !== undefined || problems.length > 0) return
        sent = true
        // cpuMs counts from here, read by the front: the module's own top-level code too, and
        // nothing pack code sends can move it.
        cpuAtStart = pidCpu(c)
        send(c, { type: 'call', task: { ...task, tmpDir: spare.folder }, entry: entryOf.get(task.key) as RunnableEntry }, { needsFolder: true })
      })
    }

    function stop(reason: StopReason): void {
      if (settled || killedFor !== undefined) return
      if (child === undefined) {
        // Still waiting for its turn: no process was taken, nothing ran.
        if (ticket.cancel()) {
          settled = true
          resolveFreed()
        }
        return
      }
      // Taken, but its process not ready yet: nothing ran, so nothing waits for a grace.
      if (!sent) {
        killedFor = reason
        child.kill()
        return
      }
      const c = child as Spawned
      if (reason !== 'cpu') send(c, { type: 'abort', reason }, { ring: DOORBELL })
      const grace = setTimeout(
        () => {
          if (killedFor !== undefined) return
          settled = true
          killedFor = reason
          c.kill()
        },
        reason === 'cpu' ? 0 : ABORT_GRACE_MS,
      )
      void freed.then(() => clearTimeout(grace))
    }

    const busyMs = () => {
      const now = child === undefined ? undefined : pidCpu(child)
      return now === undefined || cpuAtStart === undefined ? undefined : now - cpuAtStart
    }
    return { answer, freed, stop, busyMs }
  }

  /** A file request is the call's that this process runs, whatever the message says. */
  function fileRequest(c: Spawned, callId: number, event: Extract<FromStrict, { type: 'files' }>): void {
    if (!isRequestNumber(event.req)) return
    bridgeFileRequest(
      options.onFileRequest,
      callId,
      event,
      (reply) => new Promise((sent) => send(c, { type: 'file-reply', req: event.req, reply: fileReplyAcross(reply) }, { charged: true }, sent)),
    )
  }

  return {
    key: options.key,
    entries: options.entries,
    async probe() {
      const spare = spawnSpare()
      const problems = await spare.ready
      if (problems.length > 0) return problems
      // The data limit of later spares counts from what Node itself holds, before pack code.
      const pid = spare.child.pid()
      if (pid !== undefined) dataBaseline = dataBytes(pid)
      const probed = new Promise<string[]>((resolve) => {
        spare.child.onMessage((message) => {
          const event = message as FromStrict
          if (event.type === 'probed') resolve(Array.isArray(event.problems) ? event.problems.filter((p): p is string => typeof p === 'string') : [])
        })
        void spare.child.exited.then(({ code, signal }: Exit) => resolve([loadExit(options.memMB, code, signal, options.entries)]))
      })
      send(spare.child, { type: 'probe', entries: options.entries })
      const found = await probed
      spare.child.kill()
      if (found.length === 0) topUp()
      return found
    },
    run,
    workerCount: () => live.size,
    holders: () => [...calling].map((c) => ({ key: c, busyMs: () => pidCpu(c) })),
    async close() {
      closed = true
      const ends = [...live].map((c) => c.exited)
      for (const c of live) c.kill()
      await Promise.all(ends)
    },
  }
}

function send(child: Spawned, message: ToStrict, options?: SendOptions, sent?: () => void): void {
  child.send(message, options, sent)
}

/** CPU time of a strict call's process, in ms, from /proc. */
function pidCpu(child: Spawned): number | undefined {
  const pid = child.pid()
  return pid === undefined ? undefined : cpuTimeMs(pid)
}

/** V8 ends a process out of heap with an abort (or a trap): under memMB, that is what such an end means. */
function outOfMemory(memMB: number | undefined, code: number | null, signal: NodeJS.Signals | null): boolean {
  return memMB !== undefined && (signal === 'SIGABRT' || signal === 'SIGTRAP' || signal === 'SIGSEGV' || code === 134)
}

/** The boot problem of a strict process that ended while it loaded its group's modules. */
function loadExit(memMB: number | undefined, code: number | null, signal: NodeJS.Signals | null, entries: readonly RunnableEntry[]): string {
  const how = signal ?? `code ${code}`
  if (!outOfMemory(memMB, code, signal)) return `A strict process exited (${how}) while loading its modules`
  const modules = [...new Set(entries.map((e) => e.modulePath))].join(', ')
  return `A strict process ran out of memory (${how}) loading ${modules}: memMB ${memMB} is its heap limit, too small to load them; raise the tool's limits.memMB`
}
