// How fast the host reads what pack code writes on a pipe to it: a budget a second, with a
// first burst of as many. Reading costs the host CPU that no limit of the call counts (passing
// pack output on, pack-output.ts; parsing and relaying a strict process's channel lines, the
// spawner), so a pipe past its budget is not read until the budget is back: the process waits in
// its own writes, and nothing it wrote is lost.

export type ReadRate = {
  /** Takes `amount` from the budget; the ms until the budget is back out of debt (0: it is not in debt). */
  spend(amount: number): number
}

export function createReadRate(perSecond: number, burst: number = perSecond, now: () => number = () => performance.now()): ReadRate {
  let budget = burst
  let at = now()
  return {
    spend(amount) {
      const t = now()
      budget = Math.min(burst, budget + ((t - at) * perSecond) / 1000) - amount
      at = t
      return budget >= 0 ? 0 : Math.ceil((-budget * 1000) / perSecond)
    },
  }
}
