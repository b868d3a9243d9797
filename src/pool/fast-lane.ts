// The front's side of answer cells (protocol/answer-cell.ts): when a call is the only one on
// a worker thread, the front has nothing else to do, so it spins briefly for the answer
// instead of sleeping until the worker's message wakes it. A tool whose answers do not come
// within the budget is skipped for a growing number of calls, so a slow handler costs the
// front at most one budget now and then, never one per call.
import { awaitAnswerCell, createAnswerCell, resetAnswerCell, type AnswerCell } from '../protocol/answer-cell.js'
import type { CallResult } from '../protocol/worker-messages.js'

/** Longest the front blocks its event loop for one answer (echo's came 42–72 µs p50 after it was sent, here). */
export const SPIN_BUDGET_US = 300
const MAX_SKIP = 1024

export type FastLane = {
  /** A cell for this call, or undefined when the tool's recent answers missed the budget. */
  offer(key: string): AnswerCell | undefined
  /** Spins for the answer; undefined means it comes the usual way. */
  take(key: string, cell: AnswerCell): CallResult | undefined
  /** Once the worker is done with the call: the cell may serve another. */
  release(cell: AnswerCell): void
}

export function createFastLane(budgetUs = SPIN_BUDGET_US): FastLane {
  const free: AnswerCell[] = []
  const backoff = new Map<string, { skip: number; penalty: number }>()
  return {
    offer(key) {
      const b = backoff.get(key)
      if (b !== undefined && b.skip > 0) {
        b.skip--
        return undefined
      }
      const cell = free.pop() ?? createAnswerCell()
      resetAnswerCell(cell)
      return cell
    },
    take(key, cell) {
      const result = awaitAnswerCell(cell, budgetUs)
      const b = backoff.get(key)
      if (result !== undefined) {
        if (b !== undefined) b.penalty = 0
        return result
      }
      const penalty = Math.min(MAX_SKIP, b === undefined || b.penalty === 0 ? 1 : b.penalty * 2)
      backoff.set(key, { skip: penalty, penalty })
      return undefined
    },
    release(cell) {
      if (free.length < 8) free.push(cell)
    },
  }
}
