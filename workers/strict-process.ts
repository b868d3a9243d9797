// A strict call's own process (issue 16): started ahead as a spare by the front, under the
// permission model, with no token, no socket of the front's and nothing of another call. It
// gets its group's entries first and puts the guards in, but imports the pack's modules only
// when its one call arrives, so a spare runs no pack code. It answers over its IPC channel and
// is then killed by the front. Whatever it does (exit, abort, run out of memory) ends only it.
import type { FileReplyMessage, FromStrict, ToStrict } from '../src/protocol/strict-messages.js'
import type { CallTask } from '../src/protocol/worker-messages.js'
import { abortCall } from './abort-registry.js'
import { setFileChannel, type Reply } from './files.js'
import { loadEntries } from './load-entries.js'
import { pinSources } from './pinned-sources.js'
import { runCall } from './run-call.js'
import { guardsNetwork, prepare, setup } from './worker-state.js'

const send = (event: FromStrict, done?: () => void): void => {
  process.send!(event, undefined, undefined, done)
}

const fileReplies = new Map<number, (reply: Reply) => void>()
let nextRequest = 0
let callId = -1

setFileChannel((_callId, message, transfer) => {
  const req = nextRequest++
  void transfer // the IPC channel copies; nothing to transfer
  send({ type: 'files', req, ...message } as FromStrict)
  return {
    reply: new Promise<Reply>((resolve) => fileReplies.set(req, resolve)),
    cancel: () => fileReplies.delete(req),
  }
})

async function serve(task: CallTask): Promise<void> {
  callId = task.callId
  // Only the called entry's module: the others' top-level code has no business here.
  const loaded = await loadEntries(setup.entries.filter((e) => e.key === task.key))
  if (loaded.problems.length > 0) {
    // The modules loaded at boot; a change since is this call's failure, said plainly.
    throw new Error(`its modules no longer load: ${loaded.problems.join('; ')}`)
  }
  // Where the call's CPU time starts, for a tool whose cpuMs the front enforces; no other needs it.
  if (loaded.entries.get(task.key)?.entry.cpuMs !== undefined) send({ type: 'started' })
  const result = await runCall(loaded.entries, task)
  send({ type: 'result', result })
}

process.on('message', (message: ToStrict) => {
  switch (message.type) {
    case 'setup':
      if (message.sources !== undefined) pinSources(message.sources)
      // Node makes process.stdout/stderr on first use, as sockets over their pipes: under the
      // network guard, make them before it refuses sockets to pack code (else on first use).
      if (guardsNetwork(message.setup)) {
        void process.stdout
        void process.stderr
      }
      prepare(message.setup)
      send({ type: 'spare-ready' })
      return
    case 'probe':
      void loadEntries(setup.entries).then((loaded) => send({ type: 'probed', problems: loaded.problems }))
      return
    case 'call':
      void serve(message.task)
      return
    case 'abort':
      abortCall({ callId, reason: message.reason })
      return
    case 'file-reply':
      fileReplies.get(message.req)?.(message.reply satisfies FileReplyMessage as Reply)
      fileReplies.delete(message.req)
      return
  }
})
// The front is gone: so is the reason to live.
process.on('disconnect', () => process.exit(1))
