// How fast the host reads what pack code writes on a pipe to it: a budget a second, with a
// first burst of as many. Reading costs the host CPU that no limit of the call counts (passing
// pack output on, pack-output.ts; parsing and relaying a strict process's channel lines, the
// spawner), so a pipe past its budget is not read until the budget is back: the process waits in
// its own writes, and nothing it wrote is lost.
import { MAX_LINE } from '../protocol/channel-limits.js'

/**
 * Characters a second of what a process that runs pack code has the host parse, relay or fetch
 * for it (a strict call's channel, in the spawner; a warm process's file replies, in the front),
 * after a first burst of twice as many (an answer as long as a line may be, with room). Lines of
 * 15 MiB, each a valid message, cost the spawner and the front 19–29 times what writing them cost
 * the call, for as long as its deadline let it write (a red-team pass, stop 40); 10 MiB file reads,
 * four at a time, cost a warm call's front 0.85 of its core (stop 42). Past it, the process waits.
 */
export const CHANNEL_RATE = MAX_LINE

/**
 * What one message costs of that rate at the least: parsing, relaying or fetching for a message
 * costs per message as much as per character, and 460,000 file requests of 200 characters in 6 s
 * cost the spawner and the front most of a core (stop 40's second pass). A call sends a handful of
 * messages, a few hundred file requests at most.
 */
export const MIN_MESSAGE_CHARGE = 16 * 1024

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
