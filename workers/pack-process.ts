// A warm group's own process: the front never runs pack code, in any posture. It runs the
// group's warm pool (warm-pool.ts: Piscina, with a thread budget of its own), started by the
// front with the filtered pack env (never the token), no socket of the front's, under the
// permission model (src/pool/strict-flags.ts). Calls come over its channel from the front
// (stdin, fd-channel.ts) in batches; answers, frees and file requests go back on fd 3, in
// batches no longer than the front reads (channel-limits.ts).
// Whatever pack code does to this process (exit, abort, kill it) ends only it: the front
// answers its calls and starts another.
import { randomBytes } from 'node:crypto'
import type { MessagePort } from 'node:worker_threads'
import { MAX_BATCH_ITEMS, MAX_LINE } from '../src/protocol/channel-limits.js'
import { fromBase64, toBase64 } from '../src/protocol/frame-channel.js'
import { fileRequestTooLong } from '../src/protocol/file-request-bounds.js'
import { SEAL_CHARS, sealLine } from '../src/protocol/line-seal.js'
import type { FileReplyMessage, FromPack, FromPackItem, PackSetup, ToPack, ToPackItem } from '../src/protocol/pack-messages.js'
import type { CallTask, FileRequest } from '../src/protocol/worker-messages.js'
import type { RunningCall } from '../src/pool/group.js'
import { openFdChannel } from './fd-channel.js'
import { createWarmPool, type WarmPool } from './warm-pool.js'

const WORKERS_CHECK_MS = 500

let pool: WarmPool | undefined
/** Calls handed to the pool and not yet freed, by call id: where a stop goes. */
const calls = new Map<number, RunningCall>()
const filePorts = new Map<number, MessagePort>()
let nextFileRequest = 0
let lastWorkers = -1

/** What came before the pool was made (it waits for the front to count this process's threads). */
let early: ToPack[] | undefined = []
let setupGiven: PackSetup | undefined

let outbox: FromPackItem[] = []
let flushing = false

// Made now, before any pack code, as stdout and stderr are below.
// The front is gone when the channel closes: so is the reason to live.
const channel = openFdChannel(
  (message) => onMessage(message as ToPack),
  () => process.exit(1),
)
channel.listen()

/** What a batch line holds around its items. */
const BATCH_OPEN = '{"type":"batch","items":['
const MAX_ITEMS_CHARS = MAX_LINE - SEAL_CHARS - BATCH_OPEN.length - 2

/**
 * Every line sealed with the key the front gave this process before any pack code loaded: pack
 * code can write on fd 3 too, but not a sealed line, nor into one (src/protocol/line-seal.ts).
 */
function sendLine(text: string): void {
  channel.sendLine(sealLine((setupGiven as PackSetup).secret, text))
}

function send(message: FromPack): void {
  sendLine(JSON.stringify(message))
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
  const workers = pool?.workerCount() ?? 0
  if (workers !== lastWorkers) {
    lastWorkers = workers
    items.push({ type: 'workers', count: workers })
  }
  if (items.length === 0) return
  // Each item fits a line (run-call.ts bounds answers, files.ts files); a batch is cut where
  // the next item would take its line past what the front reads, in characters or in items.
  let line: string[] = []
  let chars = 0
  for (const item of items) {
    const text = JSON.stringify(item)
    if (line.length > 0 && (chars + text.length > MAX_ITEMS_CHARS || line.length === MAX_BATCH_ITEMS)) {
      sendLine(`${BATCH_OPEN}${line.join(',')}]}`)
      line = []
      chars = 0
    }
    line.push(text)
    chars += text.length + 1
  }
  sendLine(`${BATCH_OPEN}${line.join(',')}]}`)
}

/**
 * A group whose tools all have limits has its threads counted by the front: Node's own threads
 * first, once libuv's thread pool is up (an async crypto call starts it), before any worker.
 */
function prepare(setup: PackSetup): void {
  setupGiven = setup
  if (!setup.countThreads) {
    start(setup)
    return
  }
  randomBytes(1, () => send({ type: 'threads-base' }))
}

function start(setup: PackSetup): void {
  pool = createWarmPool({
    key: setup.key,
    entries: setup.entries,
    env: { ...process.env } as Record<string, string>,
    memMB: setup.memMB,
    maxThreads: setup.maxThreads,
    minThreads: setup.minThreads,
    workerThreads: setup.workerThreads,
    onReplaced: (reason, id) => out({ type: 'replaced', reason, id }),
    onWorkersBurnt: (times) => out({ type: 'workers-burnt', times }),
    onFileRequest: fileRequest,
  })
  setInterval(() => {
    if ((pool?.workerCount() ?? 0) !== lastWorkers) out({ type: 'workers', count: pool?.workerCount() ?? 0 })
  }, WORKERS_CHECK_MS).unref()
  const waiting = early ?? []
  early = undefined
  for (const message of waiting) onMessage(message)
}

function run(task: CallTask): void {
  const running = (pool as WarmPool).run(task)
  calls.set(task.callId, running)
  void running.answer.then((answer) => out({ type: 'answer', callId: task.callId, answer }))
  void running.freed.then(() => {
    calls.delete(task.callId)
    out({ type: 'freed', callId: task.callId })
  })
}

function fileRequest(request: FileRequest): void {
  // Refused here, before it crosses the channel: the front would refuse it too.
  const refused = fileRequestTooLong(request)
  if (refused !== undefined) {
    request.port.postMessage({ kind: 'error', message: refused })
    request.port.close()
    return
  }
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
      calls.get(item.callId)?.stop(item.reason)
      return
    case 'file-reply':
      fileReply(item.req, item.reply)
      return
    case 'count-threads':
      // Sent at once, not batched: the front reads the process's threads as this arrives.
      send({ type: 'batch', items: [{ type: 'threads', live: (pool as WarmPool).liveThreads() }] })
      return
  }
}

// Node makes process.stdout/stderr on first use, as sockets over their pipes: make them now.
void process.stdout
void process.stderr

function onMessage(message: ToPack): void {
  if (message.type === 'setup') {
    prepare(message.setup)
    return
  }
  if (message.type === 'threads-counted') {
    start(setupGiven as PackSetup)
    return
  }
  if (early !== undefined) {
    early.push(message)
    return
  }
  switch (message.type) {
    case 'probe':
      ;(pool as WarmPool).probe().then(
        (problems) => send({ type: 'probed', problems }),
        (err: unknown) => send({ type: 'probe-failed', message: err instanceof Error ? err.message : String(err) }),
      )
      return
    case 'batch':
      for (const item of message.items) handle(item)
      return
    case 'close':
      // Calls still running end as shutdown; their answers go before the process does.
      void (pool?.close() ?? Promise.resolve()).finally(() => {
        flush()
        setImmediate(() => process.exit(0))
      })
      return
  }
}
