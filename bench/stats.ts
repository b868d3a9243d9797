// Pure numbers for the benchmark: medians, percentiles and per-round ratios. No I/O, so
// the unit tests cover it without running a benchmark.

/** The median of the finite values; NaN when there are none. */
export function median(values: readonly number[]): number {
  const xs = values.filter(Number.isFinite).sort((a, b) => a - b)
  if (xs.length === 0) return Number.NaN
  const mid = xs.length >> 1
  return xs.length % 2 === 1 ? (xs[mid] as number) : ((xs[mid - 1] as number) + (xs[mid] as number)) / 2
}

/** The p-th percentile (0–100) of values already sorted ascending, nearest-rank; NaN when empty. */
export function percentileSorted(sorted: ArrayLike<number>, p: number): number {
  if (sorted.length === 0) return Number.NaN
  const rank = Math.ceil((p / 100) * sorted.length)
  return sorted[Math.min(sorted.length - 1, Math.max(0, rank - 1))] as number
}

/** The first (1) or third (3) quartile of the finite values, nearest-rank; NaN when there are none. */
export function quartile(values: readonly number[], q: 1 | 3): number {
  return percentileSorted(
    values.filter(Number.isFinite).sort((a, b) => a - b),
    q * 25,
  )
}

/** a / b, NaN when either is missing or b is 0. */
export function ratio(a: number, b: number): number {
  return Number.isFinite(a) && Number.isFinite(b) && b !== 0 ? a / b : Number.NaN
}

/**
 * The median over rounds of the per-round ratio a[i] / b[i]: each pair ran back to back,
 * so the machine's drift between rounds cancels out (a ratio of medians would not).
 */
export function medianRatio(a: readonly number[], b: readonly number[]): number {
  const n = Math.min(a.length, b.length)
  const ratios: number[] = []
  for (let i = 0; i < n; i++) ratios.push(ratio(a[i] as number, b[i] as number))
  return median(ratios)
}

/** The median over rounds of a[i] - b[i]. */
export function medianDifference(a: readonly number[], b: readonly number[]): number {
  const n = Math.min(a.length, b.length)
  const diffs: number[] = []
  for (let i = 0; i < n; i++) diffs.push((a[i] as number) - (b[i] as number))
  return median(diffs)
}
