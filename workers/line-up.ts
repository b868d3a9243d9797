// When a call may wait behind another on that one's worker (warm-pool.ts), instead of in the
// thread budget: only behind a call that started just now, of a tool whose calls are short,
// and only a few deep. Such a call starts the moment the one ahead ends, on the worker itself;
// one that waited longer than a short call takes is withdrawn, to run on its own. A tool's
// calls count as short from how long its last ones took (a moving average).

/** Calls on one worker at most: the one it runs and those waiting behind it. */
export const LINE = 4
/** How young the call ahead must be; a call that has waited this long behind it is withdrawn. */
export const BEHIND_MS = 5
/** How short a tool's calls must typically be for others to wait behind them. */
const FAST_MS = 2
const WEIGHT = 0.2

export type LineUp = {
  /** A call of `key` took `ms`, from its start on its worker to its answer. */
  took(key: string, ms: number): void
  /** May a call wait behind `ahead` (of `key`, running since `startedAt`) in a line of `length`? */
  mayWaitBehind(key: string, startedAt: number, length: number, now: number): boolean
}

export function createLineUp(): LineUp {
  const typicalMs = new Map<string, number>()
  return {
    took(key, ms) {
      const typical = typicalMs.get(key)
      typicalMs.set(key, typical === undefined ? ms : typical * (1 - WEIGHT) + ms * WEIGHT)
    },
    mayWaitBehind(key, startedAt, length, now) {
      const typical = typicalMs.get(key)
      return length < LINE && now - startedAt < BEHIND_MS && typical !== undefined && typical < FAST_MS
    },
  }
}
