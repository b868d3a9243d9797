// A warm group's own process (issue 16): the front never runs pack code, in any posture. It
// runs the group's Piscina pool (src/pool/piscina-group.ts, unchanged in what it does) with a
// thread budget of its own, started by the front with the filtered pack env (never the
// token), no socket of the front's, under the permission model (strict-flags.ts). Calls come
// over its channel to the front (fd 3, frame-channel.ts) in batches; answers, frees and file requests go back the same way.
// cpuMs is enforced here, where the Worker objects are. Whatever pack code does to this
// process (exit, abort, kill it) ends only it: the front answers its calls and starts another.
import { randomUUID } from 'node:crypto'
import { Socket } from 'node:net'
import type { MessagePort } from 'node:worker_threads'
import { fromBase64, openFrames, toBase64, viaIpc } from '../src/protocol/frame-channel.js'
import { cpuExceeded } from '../src/protocol/messages.js'
import type { FileReplyMessage, FromPack, FromPackItem, PackSetup, ToPack, ToPackItem } from '../src/protocol/pack-messages.js'
import type { CallTask, RunnableEntry } from '../src/protocol/worker-messages.js'
import type { GroupAnswer, RunningCall, WorkerGroup } from '../src/pool/group.js'
import { createPiscinaGroup } from '../src/pool/piscina-group.js'
import { createThreadBudget, type ThreadBudget } from '../src/pool/thread-budget.js'
import type { FileRequest } from '../src/pool/tool-files.js'

/** How often a call past its cpuMs of wall time has its busy time read (as the front did). */
const CPU_CHECK_MS = 20
const WORKERS_CHECK_MS = 500

type Call = { running: RunningCall; answered: boolean; cpuWatch: NodeJS.Timeout | undefined }

let group: WorkerGroup | undefined
let budget: ThreadBudget | undefined
const byKey = new Map<string, RunnableEntry>()
const calls = new Map<number, Call>()
const filePorts = new Map<number, MessagePort>()
let nextFileRequest = 0
let lastWorkers = -1

let outbox: FromPackItem[] = []
let flushing = false

// Made now, before any pack code, as stdout and stderr are below.
// The front is gone when the channel closes: so is the reason to live.
const channel =
  process.channel === undefined
    ? openFrames<ToPack, FromPack>(new Socket({ fd: 3, readable: true, writable: true }), (message) => onMessage(message), () => process.exit(1))
    : viaIpc<ToPack, FromPack>(process, (message) => onMessage(message), () => process.exit(1))

function send(message: FromPack): void {
  channel.send(message)
}

/** Items queued in one turn of the event loop leave together. */
function out(item: FromPackItem): void {
  outbox.push(item)
  if (flushing) return
  flushing = true
  setImmediate(flush)
}

function flush(): void {
  flushing = false
  const items = outbox
  outbox = []
  const workers = group?.workerCount() ?? 0
  if (workers !== lastWorkers) {
    lastWorkers = workers
    items.push({ type: 'workers', count: workers })
  }
  if (items.length > 0) send({ type: 'batch', items })
}

function start(setup: PackSetup): void {
  for (const entry of setup.entries) byKey.set(entry.key, entry)
  let holders: WorkerGroup['holders'] = () => []
  budget = createThreadBudget(setup.workerThreads, () => holders())
  group = createPiscinaGroup({
    key: setup.key,
    entries: setup.entries,
    env: { ...process.env } as Record<string, string>,
    memMB: setup.memMB,
    maxThreads: setup.maxThreads,
    minThreads: setup.minThreads,
    // Only this process's workers listen on it; notices carry their run's nonce besides.
    abortChannel: `kindgi-pack-host-abort-${randomUUID()}`,
    onReplaced: (reason, id) => out({ type: 'replaced', reason, id }),
    onFileRequest: fileRequest,
    budget,
  })
  holders = group.holders
  setInterval(() => {
    if ((group?.workerCount() ?? 0) !== lastWorkers) out({ type: 'workers', count: group?.workerCount() ?? 0 })
  }, WORKERS_CHECK_MS).unref()
}

function run(task: CallTask): void {
  const running = (group as WorkerGroup).run(task)
  const call: Call = { running, answered: false, cpuWatch: undefined }
  calls.set(task.callId, call)
  const answer = (given: GroupAnswer) => {
    if (call.answered) return
    call.answered = true
    clearTimeout(call.cpuWatch)
    out({ type: 'answer', callId: task.callId, answer: given })
  }
  void running.answer.then(answer)
  void running.freed.then(() => {
    clearTimeout(call.cpuWatch)
    calls.delete(task.callId)
    out({ type: 'freed', callId: task.callId })
  })
  const entry = byKey.get(task.key)
  const cpuMs = entry?.cpuMs
  if (entry === undefined || cpuMs === undefined) return
  // Busy time never runs ahead of wall time: nothing is read before cpuMs has passed.
  const check = () => {
    const busy = running.busyMs()
    if (busy === undefined || busy <= cpuMs) {
      call.cpuWatch = setTimeout(check, CPU_CHECK_MS)
      return
    }
    running.stop('cpu')
    const message = cpuExceeded({ target: entry.target, id: entry.id }, cpuMs)
    answer({ kind: 'result', result: { outcome: message.code, body: JSON.stringify(message) } })
  }
  call.cpuWatch = setTimeout(check, cpuMs)
}

function fileRequest(request: FileRequest): void {
  const req = nextFileRequest++
  filePorts.set(req, request.port)
  if (request.op === 'store') {
    out({ type: 'files', callId: request.callId, req, op: 'store', bytes64: toBase64(request.bytes), name: request.name, contentType: request.contentType })
  } else {
    out({ type: 'files', callId: request.callId, req, op: 'read', artifactId: request.artifactId })
  }
}

function fileReply(req: number, reply: FileReplyMessage): void {
  const port = filePorts.get(req)
  if (port === undefined) return
  filePorts.delete(req)
  if (reply.kind === 'ok' && 'bytes64' in reply.value) {
    const bytes = fromBase64(String(reply.value.bytes64))
    port.postMessage({ kind: 'ok', value: { bytes } }, [bytes])
  } else {
    port.postMessage(reply)
  }
  port.close()
}

function handle(item: ToPackItem): void {
  switch (item.type) {
    case 'call':
      run(item.task)
      return
    case 'stop':
      calls.get(item.callId)?.running.stop(item.reason)
      return
    case 'file-reply':
      fileReply(item.req, item.reply)
      return
  }
}

// Node makes process.stdout/stderr on first use, as sockets over their pipes: make them now.
void process.stdout
void process.stderr

function onMessage(message: ToPack): void {
  switch (message.type) {
    case 'setup':
      start(message.setup)
      return
    case 'probe':
      ;(group as WorkerGroup).probe().then(
        (problems) => send({ type: 'probed', problems }),
        (err: unknown) => send({ type: 'probe-failed', message: err instanceof Error ? err.message : String(err) }),
      )
      return
    case 'batch':
      for (const item of message.items) handle(item)
      return
    case 'close':
      budget?.close()
      void (group?.close() ?? Promise.resolve()).finally(() => process.exit(0))
      return
  }
}
