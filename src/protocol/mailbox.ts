// A busy worker's next calls, put in shared memory by the front while the worker is still on
// its current one. The worker takes the first the moment it finishes, instead of returning to
// Piscina, parking, and being woken by the front's next task (the wake was the largest cost
// left on the front at 32 callers: Piscina's postTask, ~21 % of its main thread). A call in a
// mailbox has not started: the front can take it back until the worker has taken it, so a call
// never waits long behind a slow one and never dies with a worker it did not run on.
// Layout: Int32 state (also the lock), Int32 calls in it, Int32 bytes used, Int32 the id of the
// call the worker runs (its answers before that one are on their way by message); then one
// record per call, in order: Int32 call id, Int32 header bytes, Int32 body bytes, pad to 4,
// header JSON, body.
import type { CallTask } from './worker-messages.js'

export type Mailbox = SharedArrayBuffer

/** The part of a call a mailbox carries (calls with files, a tmp dir or an answer cell never go in one). */
export type NextCall = Pick<CallTask, 'callId' | 'key' | 'body' | 'ids' | 'cpuSlot'>

const HEADER_BYTES = 16
const RECORD_HEADER = 12
const MAILBOX_BYTES = 32 * 1024
/** Calls waiting in one mailbox at most. */
export const MAILBOX_CALLS = 4

// Only the worker closes (nothing in it: its run is ending); either side locks while it changes the records.
const CLOSED = 0
const EMPTY = 1
const HOLDING = 2
const LOCKED = 3

export function createMailbox(): Mailbox {
  return new SharedArrayBuffer(HEADER_BYTES + MAILBOX_BYTES)
}

/** Front side, before the run that owns the mailbox starts. */
export function openMailbox(mailbox: Mailbox, firstCallId: number): void {
  const header = new Int32Array(mailbox, 0, 4)
  header[1] = 0
  header[2] = 0
  header[3] = firstCallId
  Atomics.store(header, 0, EMPTY)
}

/** Front side: the call the worker took last (the run's first call until it takes one). */
export function runningCall(mailbox: Mailbox): number {
  return Atomics.load(new Int32Array(mailbox, 0, 4), 3)
}

/** Whether a call's body can fit (UTF-8 is at most 3 bytes per UTF-16 unit). */
export function fitsMailbox(body: string): boolean {
  return body.length * 3 + 1024 <= MAILBOX_BYTES / MAILBOX_CALLS
}

/**
 * Takes the lock; the state it had, or CLOSED. The other side holds it for a few µs, unless its
 * thread is preempted or (a worker) terminated while holding it: the front gives up after
 * FRONT_LOCK_MS and counts the mailbox as closed, rather than hang.
 */
function lock(header: Int32Array, giveUpAt = Infinity): number {
  for (let spins = 0; ; spins++) {
    const state = Atomics.load(header, 0)
    if (state === CLOSED) return CLOSED
    if (state !== LOCKED) {
      if (Atomics.compareExchange(header, 0, state, LOCKED) === state) return state
    } else if ((spins & 1023) === 1023 && performance.now() > giveUpAt) {
      return CLOSED
    }
  }
}

const FRONT_LOCK_MS = 50

function unlock(header: Int32Array): void {
  Atomics.store(header, 0, (header[1] as number) > 0 ? HOLDING : EMPTY)
}

function recordBytes(bytes: Buffer, at: number): number {
  const ints = new Int32Array(bytes.buffer, bytes.byteOffset + at, 3)
  return align(RECORD_HEADER + (ints[1] as number) + (ints[2] as number))
}

function align(n: number): number {
  return (n + 3) & ~3
}

/** Front side: false when the mailbox is full or closed (its run is ending). */
export function putNext(mailbox: Mailbox, call: NextCall): boolean {
  const header = new Int32Array(mailbox, 0, 3)
  if ((header[1] as number) >= MAILBOX_CALLS || lock(header, performance.now() + FRONT_LOCK_MS) === CLOSED) return false
  const used = header[2] as number
  const bytes = Buffer.from(mailbox, HEADER_BYTES, MAILBOX_BYTES)
  const head = JSON.stringify({ key: call.key, ids: call.ids, cpuSlot: call.cpuSlot })
  if ((header[1] as number) >= MAILBOX_CALLS || used + RECORD_HEADER + head.length * 3 + call.body.length * 3 + 4 > MAILBOX_BYTES) {
    unlock(header)
    return false
  }
  const headBytes = bytes.write(head, used + RECORD_HEADER, 'utf8')
  const bodyBytes = bytes.write(call.body, used + RECORD_HEADER + headBytes, 'utf8')
  const ints = new Int32Array(mailbox, HEADER_BYTES + used, 3)
  ints[0] = call.callId
  ints[1] = headBytes
  ints[2] = bodyBytes
  header[2] = used + align(RECORD_HEADER + headBytes + bodyBytes)
  header[1] = (header[1] as number) + 1
  unlock(header)
  return true
}

/** Front side: true when the call was still waiting and now never runs from this mailbox. */
export function revokeNext(mailbox: Mailbox, callId: number): boolean {
  const header = new Int32Array(mailbox, 0, 3)
  if (lock(header, performance.now() + FRONT_LOCK_MS) === CLOSED) return false
  const bytes = Buffer.from(mailbox, HEADER_BYTES, MAILBOX_BYTES)
  const used = header[2] as number
  let at = 0
  for (let i = 0; i < (header[1] as number); i++) {
    const size = recordBytes(bytes, at)
    if (new Int32Array(mailbox, HEADER_BYTES + at, 1)[0] === callId) {
      bytes.copyWithin(at, at + size, used)
      header[2] = used - size
      header[1] = (header[1] as number) - 1
      unlock(header)
      return true
    }
    at += size
  }
  unlock(header)
  return false
}

/** Worker side, after each call: the next call, or undefined after closing the empty mailbox. */
export function takeNext(mailbox: Mailbox): NextCall | undefined {
  const header = new Int32Array(mailbox, 0, 4)
  for (;;) {
    if (Atomics.compareExchange(header, 0, EMPTY, CLOSED) === EMPTY) return undefined
    const state = lock(header)
    if (state === CLOSED) return undefined
    if ((header[1] as number) === 0) {
      unlock(header) // emptied by a revoke meanwhile: close on the next turn
      continue
    }
    const bytes = Buffer.from(mailbox, HEADER_BYTES, MAILBOX_BYTES)
    const ints = new Int32Array(mailbox, HEADER_BYTES, 3)
    const callId = ints[0] as number
    const headBytes = ints[1] as number
    const bodyBytes = ints[2] as number
    const head = JSON.parse(bytes.toString('utf8', RECORD_HEADER, RECORD_HEADER + headBytes)) as Omit<NextCall, 'body' | 'callId'>
    const body = bytes.toString('utf8', RECORD_HEADER + headBytes, RECORD_HEADER + headBytes + bodyBytes)
    const size = align(RECORD_HEADER + headBytes + bodyBytes)
    const used = header[2] as number
    bytes.copyWithin(0, size, used)
    header[2] = used - size
    header[1] = (header[1] as number) - 1
    Atomics.store(header, 3, callId)
    unlock(header)
    return { callId, ...head, body }
  }
}
