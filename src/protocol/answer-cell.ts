// A call's answer, copied by the worker into shared memory the moment it is ready, so that a
// front with nothing else to do can take it without waiting for its event loop to be woken by
// the worker's message (with the worker's own wake, most of the +184 µs a warm call added over
// the in-process reference at one caller). The message still follows, as for every call; this
// is only an earlier copy.
// Layout: Int32 state, Int32 outcome byte length, Int32 body byte length, pad, then the bytes.
import type { CallResult } from './worker-messages.js'

export type AnswerCell = SharedArrayBuffer

const HEADER_BYTES = 16
/** Answers bigger than this take the message route only. */
export const CELL_BYTES = 16 * 1024

const PENDING = 0
const WRITTEN = 1
const DECLINED = 2

export function createAnswerCell(): AnswerCell {
  return new SharedArrayBuffer(HEADER_BYTES + CELL_BYTES)
}

export function resetAnswerCell(cell: AnswerCell): void {
  Atomics.store(new Int32Array(cell, 0, 1), 0, PENDING)
}

/** Worker side: copy the answer in, or say it will not come this way. */
export function writeAnswerCell(cell: AnswerCell, result: CallResult): void {
  const header = new Int32Array(cell, 0, 3)
  if (result.retire !== undefined || result.body.length * 3 + result.outcome.length > CELL_BYTES) {
    Atomics.store(header, 0, DECLINED)
    return
  }
  const bytes = Buffer.from(cell, HEADER_BYTES, CELL_BYTES)
  const outcomeBytes = bytes.write(result.outcome, 0, 'latin1')
  const bodyBytes = bytes.write(result.body, outcomeBytes, 'utf8')
  header[1] = outcomeBytes
  header[2] = bodyBytes
  Atomics.store(header, 0, WRITTEN)
}

/**
 * Front side: spin until the answer is in the cell or `budgetUs` has passed. Spinning blocks
 * the event loop, so the caller only does it when no other call is in flight.
 */
export function awaitAnswerCell(cell: AnswerCell, budgetUs: number): CallResult | undefined {
  const header = new Int32Array(cell, 0, 3)
  const until = performance.now() + budgetUs / 1000
  let state = Atomics.load(header, 0)
  while (state === PENDING && performance.now() < until) state = Atomics.load(header, 0)
  if (state !== WRITTEN) return undefined
  const outcomeBytes = header[1] as number
  const bodyBytes = header[2] as number
  const bytes = Buffer.from(cell, HEADER_BYTES, outcomeBytes + bodyBytes)
  return {
    outcome: bytes.toString('latin1', 0, outcomeBytes) as CallResult['outcome'],
    body: bytes.toString('utf8', outcomeBytes, outcomeBytes + bodyBytes),
  }
}
