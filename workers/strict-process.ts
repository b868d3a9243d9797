// A strict call's own process (issue 16): started ahead as a spare by the spawner for the front, under the
// permission model, with no token, no socket of the front's and nothing of another call. It
// is told what its group needs first and puts the guards in, but imports a pack module only
// when its one call arrives with its entry, so a spare runs no pack code. It answers over its
// channel (fd 3, fd-channel.ts) and ends itself at once (the spawner kills it too as it relays
// the answer). Whatever it does (exit, abort, run out of memory) ends only it.
import { stat } from 'node:fs'
import { fromBase64, toBase64 } from '../src/protocol/frame-channel.js'
import { DOORBELL, type FileReplyMessage, type FromStrict, type ToStrict } from '../src/protocol/strict-messages.js'
import type { RunnableEntry } from '../src/protocol/runnable-entry.js'
import type { CallTask } from '../src/protocol/worker-messages.js'
import { abortCall } from './abort-registry.js'
import { openFdChannel } from './fd-channel.js'
import { setFileChannel, type Reply } from './files.js'
import { endThisProcess } from './guards.js'
import { loadEntries } from './load-entries.js'
import { pinSources } from './pinned-sources.js'
import { runCall } from './run-call.js'
import { prepare } from './worker-state.js'

// The spawner is gone when the channel closes: so is the reason to live.
const channel = openFdChannel(
  (message) => onMessage(message as ToStrict),
  () => process.exit(1),
)
const send: (event: FromStrict) => void = channel.send
// Until its call runs, a spare reads its channel blocking (fd-channel.ts). What comes during
// the call is announced: an abort with this signal (DOORBELL), after which the channel is read
// as it comes; a file reply is read so once the call asks for a file.
process.on(DOORBELL, () => channel.listen())

const fileReplies = new Map<number, (reply: Reply) => void>()
let nextRequest = 0
let callId = -1

setFileChannel((_callId, message, transfer) => {
  channel.listen()
  const req = nextRequest++
  void transfer // the channel copies; nothing to transfer
  const { bytes, ...rest } = message
  send({ type: 'files', req, ...rest, ...(bytes instanceof ArrayBuffer ? { bytes64: toBase64(bytes) } : {}) } as FromStrict)
  return {
    reply: new Promise<Reply>((resolve) => fileReplies.set(req, resolve)),
    cancel: () => fileReplies.delete(req),
  }
})

async function serve(task: CallTask, entry: RunnableEntry): Promise<void> {
  callId = task.callId
  // Only the called entry's module: the others' top-level code has no business here.
  const loaded = await loadEntries([entry])
  if (loaded.problems.length > 0) {
    // The modules loaded at boot; a change since is this call's failure, said plainly.
    throw new Error(`its modules no longer load: ${loaded.problems.join('; ')}`)
  }
  const result = await runCall(loaded.entries, task)
  send({ type: 'result', result })
  endThisProcess()
}

/**
 * libuv sizes its thread pool from UV_THREADPOOL_SIZE when the pool is first used, and never
 * again. Started here, before any pack code, the pool has the size the service gave the
 * process: pack code that sets the variable and then reads a file asynchronously had 1,030
 * threads in its one process, each a pid of the container's limit (a red-team pass, stop 35).
 */
function startThreadPool(): Promise<void> {
  return new Promise((resolve) => stat(new URL(import.meta.url), () => resolve()))
}

/** A spare's life: its setup, then its one call (or, at boot, the probe). */
async function main(): Promise<void> {
  const setup = (await channel.next()) as ToStrict | undefined
  if (setup?.type !== 'setup') return
  if (setup.sources !== undefined) pinSources(setup.sources)
  await prepare(setup.traits)
  await startThreadPool()
  send({ type: 'spare-ready' })
  const next = (await channel.next()) as ToStrict | undefined
  if (next?.type === 'probe') {
    const loaded = await loadEntries(next.entries)
    send({ type: 'probed', problems: loaded.problems })
    endThisProcess()
  } else if (next?.type === 'call') await serve(next.task, next.entry)
}

/** What comes while the call runs. */
function onMessage(message: ToStrict): void {
  if (message.type === 'abort') abortCall({ callId, reason: message.reason })
  else if (message.type === 'file-reply') {
    fileReplies.get(message.req)?.(fileReplyBack(message.reply))
    fileReplies.delete(message.req)
  }
}

/** A file read's bytes cross as base64 (the front's fileReplyAcross). */
function fileReplyBack(reply: FileReplyMessage): Reply {
  if (reply.kind !== 'ok' || !('bytes64' in reply.value)) return reply as Reply
  return { kind: 'ok', value: { bytes: fromBase64(String(reply.value.bytes64)) } } as Reply
}

void main()
