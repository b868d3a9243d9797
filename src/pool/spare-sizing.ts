// How many pre-warmed strict workers to keep. By Little's law, the workers being started at
// any moment = arrival rate × start time; one more covers a burst. Bounded so an idle pack
// keeps one spare and a busy one never starts more than MAX_SPARES ahead.
export const MAX_SPARES = 8
const WINDOW_MS = 5_000

/** Drops call times older than the window from `recent` (in place) and returns the target. */
export function spareTarget(recent: number[], now: number, startMs: number): number {
  while (recent.length > 0 && (recent[0] as number) < now - WINDOW_MS) recent.shift()
  const perMs = recent.length / WINDOW_MS
  return Math.max(1, Math.min(MAX_SPARES, Math.ceil(perMs * startMs) + 1))
}
