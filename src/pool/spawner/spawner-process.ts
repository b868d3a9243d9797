// The spawner: a small process of the front's that starts strict calls' processes for it.
// Starting a process copies the starter's page tables, so its cost grows with the starter's
// memory: a front holding its pools and connections pays several ms of its event loop for
// every start (bench/spawn-cost.ts), this process a fraction of that. It runs no pack code,
// holds no token and no socket of the front's; it relays each process's messages to the
// front tagged with the id the front gave that process, never with anything the process says.
// A process runs pack code, which can write anything on its channel (fd 3): so the channel is a
// pair of pipes read with our own framing (one JSON message a line, each line bounded), and a process
// that writes what is not that is killed. Node's IPC channel would trust it: a malformed frame
// threw in this process and ended it, with every strict call in flight.
// It owns each process's life around its call: the call folder made before it starts and removed
// after it has gone, its first message, its end once it has answered. The front's own event loop
// does none of that, and no message crosses for it.
import { spawn, type ChildProcess } from 'node:child_process'
import { existsSync, mkdirSync, rmdirSync, writeSync } from 'node:fs'
import { dirname } from 'node:path'
import type { Readable, Writable } from 'node:stream'
import { MAX_LINE, MAX_VALUES } from '../../protocol/channel-limits.js'
import { valuesIn } from '../../protocol/json-values.js'
import { openFrames, type FrameChannel } from '../../protocol/frame-channel.js'
import { rootIdentity } from '../call-tmp.js'
import { passLines } from '../pack-output.js'
import { whenEnded } from '../process-end.js'
import { CHANNEL_RATE, createReadRate, MIN_MESSAGE_CHARGE } from '../read-rate.js'
import { removeFolder } from '../remove-folder.js'
import { removeTree } from '../remove-tree.js'
import type { FromSpawner, ToSpawner } from './spawner-messages.js'

type Started = {
  child: ChildProcess
  channel: FrameChannel<unknown>
  /** Counts `chars` against its channel's rate (a reply it asked for). */
  charge: (chars: number) => void
  folder: string | undefined
  /** Kills it for what it did on its channel (its exit says so). */
  unreadable: () => void
  /** Kills it before it took what it was to be sent (its exit says why). */
  refuse: (why: string) => void
  /** Stops reading its channel until there is room again (release). */
  hold: () => void
}
const children = new Map<number, Started>()
/** The folders its processes' folders were made in (the front's call roots): removed should the front die. */
const roots = new Set<string>()
/** Messages of one process sent on to the front and not yet written: past it, its channel is not read. */
const MAX_RELAYING = 256
/**
 * Past this many, it is killed: pausing takes effect between chunks, and a 64 KiB chunk holds
 * 20,000 small lines. 31 processes writing such chunks took this process to 2.4 GB (an attack,
 * stop 27). A strict call's process sends a handful of messages, a few hundred file requests at
 * most.
 */
const MAX_FLOOD = 4 * MAX_RELAYING
/**
 * The same in characters (its lines' lengths), for one process and for all together. A count
 * alone let one strict call's 200 lines of 15 MiB pile up here: 1.4 GB, and under a memory
 * limit the kernel killed this process and every strict call with it (an attack, stop 27).
 * A line is read whole before it counts, so one as long as a channel takes always passes.
 */
const MAX_RELAYING_CHARS = MAX_LINE
const MAX_RELAYING_CHARS_ALL = 2 * MAX_LINE
let relayingCharsAll = 0
/** Processes whose channel is not read until what they, or all, sent on has been written. */
const held = new Set<() => boolean>()

/** Reads again every held channel that now may be. */
function release(): void {
  for (const resumed of held) if (resumed()) held.delete(resumed)
}
/** Bytes for one process that it has not read yet: past it, it is killed. */
const MAX_UNREAD = 64 * 1024 * 1024
/**
 * What each value of a line (outside its strings: json-values.ts) costs of that rate at the
 * least: parsing a line here and again in the front costs per value, and lines of 16,000 keys,
 * within the rate in characters, cost each of them most of a core (a red-team pass, stop 42).
 * A strict process's own messages hold a handful outside their strings.
 */
const VALUE_CHARGE = 256
const toFront = (message: FromSpawner): void => {
  if (process.connected) process.send!(message)
}

process.on('message', (message: ToSpawner) => {
  if (message.t === 'start') {
    start(message)
    return
  }
  const known = children.get(message.id)
  if (known === undefined) return
  if (message.t === 'kill') known.child.kill('SIGKILL')
  else if (message.needsFolder === true && known.folder !== undefined && !existsSync(known.folder)) {
    // Removed from under it since it started: it is not given a call without its folder.
    known.refuse(`its tmpDir ${known.folder} is gone`)
  } else if (known.child.stdin !== null && known.child.stdin.writableLength > MAX_UNREAD) {
    // It leaves its stdin unread (pack code can pause it) while replies come: they are its to hold, not ours.
    known.unreadable()
  } else {
    const chars = known.channel.sendText(message.text)
    if (message.charged === true) known.charge(chars)
    if (message.ring !== undefined) known.child.kill(message.ring)
  }
})

/** Starts one process (ToSpawner 'start'), relays its messages and reports its end. */
function start(message: Extract<ToSpawner, { t: 'start' }>): void {
  const { id, folder } = message
  if (folder !== undefined) {
    roots.add(dirname(folder))
    try {
      // Not its root: that is the front's to make (call-tmp.ts), and one made here after the
      // front removed it, for a start already on its way, was left behind.
      mkdirSync(folder, { mode: 0o700 })
    } catch (err) {
      toFront({ t: 'exit', id, code: null, signal: null, unreadable: false, notStarted: `its tmpDir could not be made: ${(err as Error).message}` })
      return
    }
    // Made where the path led, which a process of the service's user may have changed: a warm
    // tool renamed the root away and put its own folder there (stop 36). Its ".." is the folder
    // it was made in, whatever that is called now.
    if (message.root !== undefined && rootIdentity(`${folder}/..`) !== message.root) {
      try {
        rmdirSync(folder)
      } catch {
        // Not ours to empty: whatever was put in it stays where it is.
      }
      const why = 'its tmpDir was not made in the folder root the service made (something put another folder in its place)'
      toFront({ t: 'exit', id, code: null, signal: null, unreadable: false, notStarted: why })
      return
    }
  }
  // Its stdout and stderr are ours to pass on as whole lines (pack-output.ts), never the service's own.
  const child = spawn(message.command, message.args, { env: message.env, stdio: ['pipe', 'pipe', 'pipe', 'pipe'] })
  if (child.stdout !== null) passLines(child.stdout, 1, { pid: child.pid, stream: 'stdout' })
  if (child.stderr !== null) passLines(child.stderr, 2, { pid: child.pid, stream: 'stderr' })
  // Its messages come on its fd 3; ours go to its stdin (workers/fd-channel.ts).
  let unreadable = false
  let notStarted: string | undefined
  let relaying = 0
  let relayingChars = 0
  const rate = createReadRate(CHANNEL_RATE, 2 * CHANNEL_RATE)
  let heldForRate: NodeJS.Timeout | undefined
  let pid: number | undefined = child.pid
  const input = child.stdio[3] as Readable
  const output = child.stdin as Writable
  const kill = () => {
    unreadable = true
    child.kill('SIGKILL')
  }
  const channel = openFrames<unknown, unknown>(
    input,
    output,
    (msg, chars, text) => {
      if (unreadable || !process.connected) return
      // A type it has no business sending is pack code writing on its channel: nothing to relay.
      if (message.types !== undefined && !message.types.includes((msg as { type?: unknown } | null)?.type as string)) {
        kill()
        return
      }
      // Its answer given, it has nothing left to do: ended here, a message sooner than the front
      // could, and before the answer goes on, so the front frees its slot knowing it runs nothing more.
      if (message.endAfter !== undefined && (msg as { type?: unknown } | null)?.type === message.endAfter) child.kill('SIGKILL')
      // It crosses as the text it wrote (spawner-messages.ts); a send that fails must not throw
      // here, where it would end us.
      const sent = () => {
        relaying--
        relayingChars -= chars
        relayingCharsAll -= chars
      }
      try {
        relaying++
        relayingChars += chars
        relayingCharsAll += chars
        const relayed: FromSpawner = pid === undefined ? { t: 'message', id, text } : { t: 'message', id, text, pid }
        pid = undefined
        process.send!(relayed, undefined, undefined, () => {
          sent()
          release()
        })
      } catch {
        sent()
        kill()
        return
      }
      // A process that floods its channel waits for the front to take what it sent, and past
      // all bounds is killed; past the bound for all, every process waits.
      if (relaying > MAX_FLOOD) kill()
      else if (relayingCharsAll >= MAX_RELAYING_CHARS_ALL) for (const other of children.values()) other.hold()
      else if (!mayRead()) hold()
      charge(Math.max(chars, MIN_MESSAGE_CHARGE, valuesIn(text, MAX_VALUES) * VALUE_CHARGE))
    },
    // Its end closed: ours too, so that the channel's 'close' (which ends it, below) comes.
    () => {
      input.destroy()
      output.destroy()
    },
    kill,
  )
  /** Past its rate, its channel is not read until the rate has room again. */
  const charge = (chars: number) => {
    const waitMs = rate.spend(chars)
    if (waitMs === 0) return
    clearTimeout(heldForRate)
    hold()
    heldForRate = setTimeout(() => {
      heldForRate = undefined
      if (resumed()) held.delete(resumed)
    }, waitMs).unref()
  }
  const mayRead = () => heldForRate === undefined && relaying < MAX_RELAYING && relayingChars < MAX_RELAYING_CHARS && relayingCharsAll < MAX_RELAYING_CHARS_ALL
  const resumed = () => {
    if (!mayRead()) return false
    input.resume()
    return true
  }
  const hold = () => {
    input.pause()
    held.add(resumed)
  }
  const refuse = (why: string) => {
    notStarted = why
    child.kill('SIGKILL')
  }
  children.set(id, { child, channel, charge, folder, unreadable: kill, refuse, hold })
  let ended = false
  const end = (code: number | null, signal: NodeJS.Signals | null) => {
    if (ended) return
    ended = true
    children.delete(id)
    held.delete(resumed)
    // Off the event loop, and never a throw; a folder that will not go is left to the root's removal at shutdown.
    if (folder !== undefined) void removeFolder(folder)
    toFront(notStarted === undefined ? { t: 'exit', id, code, signal, unreadable } : { t: 'exit', id, code, signal, unreadable, notStarted })
  }
  // Once it has exited and its channel has closed (process-end.ts).
  input.once('close', whenEnded(child, end).channelClosed)
  // 'error' is also a failed kill or send: only a process that never started has ended.
  child.on('error', () => {
    if (child.pid === undefined) end(null, null)
  })
  if (message.first !== undefined) channel.sendText(message.first)
}

// A throw of ours that nothing caught (a bug): this process's bookkeeping cannot be trusted to
// go on. It says so in the service's log as the front would (one JSON line, never Node's bare
// stack trace, which broke the log's lines: a red-team pass, stop 42), ends every process it
// started and exits; the front answers their calls, removes their folders once they have gone
// (spawner.ts) and starts another spawner on next use. Not pino: what this process loads, every
// start it makes copies.
process.on('uncaughtException', (error) => {
  const record = {
    level: 'error',
    severity: 'ERROR',
    time: new Date().toISOString(),
    pid: process.pid,
    subsystem: 'pack',
    kind: 'internal-error',
    event: 'internal-error',
    error: String(error?.message ?? error).slice(0, 512),
    stack: String(error?.stack ?? '').slice(0, 2048),
    escaped: 'uncaughtException',
    in: 'spawner',
  }
  try {
    writeSync(2, `${JSON.stringify(record)}\n`)
  } finally {
    for (const { child } of children.values()) child.kill('SIGKILL')
    process.exit(1)
  }
})

// Without the front there is nobody to serve: end every process started for it, then remove
// the roots their folders were made in, then itself. The front removes its root as it closes or
// exits; killed outright (SIGKILL, the kernel's OOM killer) it runs nothing, and each such death
// left a root in the temporary folder, with the spares' folders and what running calls wrote.
// Not before the processes have gone, which could write there still; not for longer than
// ROOTS_WAIT_MS, after which what is left stays.
const ROOTS_WAIT_MS = 2_000
process.on('disconnect', () => {
  const ending = [...children.values()].map(({ child }) => {
    child.kill('SIGKILL')
    return child.exitCode !== null || child.signalCode !== null ? undefined : new Promise((resolve) => child.once('exit', resolve))
  })
  const removeRoots = () => {
    for (const root of roots) removeTree(root)
    process.exit(0)
  }
  setTimeout(removeRoots, ROOTS_WAIT_MS).unref()
  void Promise.all(ending).then(removeRoots)
})
