// The front's side of its spawner process (spawner-process.ts): starts strict calls'
// processes through it and hands each one back as a handle, so the front's own event loop
// never pays for copying its page tables. One id → handle map, one message handler, one exit
// handler that ends every handle if the spawner itself dies (a new one starts on next use).
import { spawn, type ChildProcess } from 'node:child_process'
import { fileURLToPath } from 'node:url'
import { hasEnded } from '../proc-stat.js'
import { removeFolder } from '../remove-folder.js'
import { NO_DEBUG_SIGNAL } from '../strict-flags.js'
import type { FromSpawner, ToSpawner } from './spawner-messages.js'

const SPAWNER = fileURLToPath(new URL('./spawner-process.js', import.meta.url))

/** `notStarted`: it never started (its folder could not be made), and why. */
export type Exit = { code: number | null; signal: NodeJS.Signals | null; unreadable?: boolean; notStarted?: string }

/** How a message is sent (ToSpawner 'send'): `ring` its doorbell after it, `needsFolder` only while its folder is there. */
export type SendOptions = { ring?: NodeJS.Signals; needsFolder?: boolean; charged?: boolean }

/** What the spawner does around a process's life (ToSpawner 'start'). */
export type StartOptions = { folder?: string; root?: string; first?: unknown; endAfter?: string; types?: readonly string[] }

/** A process started through the spawner. */
export type Spawned = {
  /** Its pid, once the spawner has said (with its first message). */
  pid(): number | undefined
  /** `sent`: called once the message has left the front (file replies hold a call's place until then). */
  send(message: unknown, options?: SendOptions, sent?: () => void): void
  kill(): void
  onMessage(listener: (message: unknown) => void): () => void
  exited: Promise<Exit>
}

type Handle = { pid: number | undefined; folder: string | undefined; listeners: Set<(message: unknown) => void>; exit: (exit: Exit) => void }

let spawner: ChildProcess | undefined
let nextId = 1
const handles = new Map<number, Handle>()

/** `sent`: called once the message has left this process, or can never leave it. */
function toSpawner(message: ToSpawner, sent?: () => void): void {
  if (spawner?.connected === true) spawner.send(message, () => sent?.())
  else sent?.()
}

/** Keeps the front alive while a process it started lives, and not otherwise. */
function refWhileBusy(): void {
  const channel = spawner?.channel as { ref?: () => void; unref?: () => void } | undefined
  if (handles.size > 0) {
    spawner?.ref()
    channel?.ref?.()
  } else {
    spawner?.unref()
    channel?.unref?.()
  }
}

function started(): ChildProcess {
  if (spawner !== undefined) return spawner
  // Our code only: it needs no environment, and gets none of the front's.
  const child = spawn(process.execPath, [NO_DEBUG_SIGNAL, SPAWNER], { env: {}, stdio: ['ignore', 'inherit', 'inherit', 'ipc'], serialization: 'advanced' })
  child.on('message', (message: FromSpawner) => {
    const handle = handles.get(message.id)
    if (handle === undefined) return
    if (message.t === 'message') {
      if (message.pid !== undefined) handle.pid = message.pid
      // What a strict process sends is pack code's to write too: only an object reaches a listener.
      const msg = parsed(message.text)
      if (typeof msg !== 'object' || msg === null || Array.isArray(msg)) return
      for (const listener of handle.listeners) listener(msg)
    } else if (message.t === 'exit') {
      handles.delete(message.id)
      handle.exit({ code: message.code, signal: message.signal, unreadable: message.unreadable, notStarted: message.notStarted })
      refWhileBusy()
    }
  })
  const gone = () => {
    if (spawner !== child) return
    spawner = undefined
    // Its processes must end with it: one busy in a call would not see its channel close. Their
    // folders were its to remove: left, a tenant who had the spawner die kept what its calls and
    // others' wrote there until the service stopped (a red-team pass, stop 42).
    const ended = [...handles.values()]
    handles.clear()
    for (const handle of ended) {
      if (handle.pid !== undefined) {
        try {
          process.kill(handle.pid, 'SIGKILL')
        } catch {
          // gone already
        }
      }
      if (handle.folder !== undefined) removeWhenEnded(handle.pid, handle.folder)
      handle.exit({ code: null, signal: 'SIGKILL' })
    }
  }
  child.once('exit', gone)
  child.once('error', gone)
  spawner = child
  return child
}

/** A message as JSON text, or undefined if it cannot be (nested past what JSON.stringify takes). */
function encoded(message: unknown): string | undefined {
  try {
    return JSON.stringify(message)
  } catch {
    return undefined
  }
}

/** A process's message from its text: the spawner read it as JSON, so only a bug of its would fail here. */
function parsed(text: string): unknown {
  try {
    return JSON.parse(text)
  } catch {
    return undefined
  }
}

/** How long a dead spawner's processes have to end before their folders go anyway (one unknown to us never ran pack code). */
const END_WAIT_MS = 2_000
const END_POLL_MS = 20

/** Removes `folder` once its process (`pid`, if known) has ended, or after END_WAIT_MS. */
function removeWhenEnded(pid: number | undefined, folder: string): void {
  const until = performance.now() + END_WAIT_MS
  const attempt = () => {
    if ((pid === undefined || !hasEnded(pid)) && performance.now() < until) {
      setTimeout(attempt, END_POLL_MS).unref()
      return
    }
    void removeFolder(folder)
  }
  attempt()
}

export function startProcess(command: string, args: string[], env: Record<string, string>, options: StartOptions = {}): Spawned {
  started()
  const id = nextId++
  let resolveExit!: (exit: Exit) => void
  const exited = new Promise<Exit>((resolve) => (resolveExit = resolve))
  const handle: Handle = { pid: undefined, folder: options.folder, listeners: new Set(), exit: resolveExit }
  handles.set(id, handle)
  refWhileBusy()
  const { first, ...rest } = options
  toSpawner(
    first === undefined ? { t: 'start', id, command, args, env, ...rest } : { t: 'start', id, command, args, env, ...rest, first: JSON.stringify(first) },
  )
  return {
    pid: () => handle.pid,
    send(msg, sendOptions, sent) {
      const text = encoded(msg)
      if (text !== undefined) return toSpawner({ t: 'send', id, text, ...sendOptions }, sent)
      // Nothing of ours fails to encode; a tool file's reply from the file store might: its process gets no message, and ends.
      toSpawner({ t: 'kill', id })
      sent?.()
    },
    kill: () => toSpawner({ t: 'kill', id }),
    onMessage(listener) {
      handle.listeners.add(listener)
      return () => handle.listeners.delete(listener)
    },
    exited,
  }
}
