// Which workers run which entries (CONTRACT §6): policy only, no mechanics. `none` entries
// share warm workers, split only where a worker-wide setting differs (heap limit, network
// guard); `context-isolated` and `strict` entries get workers of their own.
import type { RunnableEntry } from '../protocol/worker-messages.js'

export type GroupPlan = { key: string; posture: RunnableEntry['posture']; memMB: number | undefined; entries: RunnableEntry[] }

export function planGroups(entries: RunnableEntry[]): GroupPlan[] {
  const groups = new Map<string, GroupPlan>()
  for (const entry of entries) {
    const key =
      entry.posture === 'none'
        ? `shared${entry.memMB !== undefined ? `:memMB=${entry.memMB}` : ''}${entry.networkNone ? ':network=none' : ''}`
        : `${entry.posture}:${entry.key}`
    let group = groups.get(key)
    if (group === undefined) {
      group = { key, posture: entry.posture, memMB: entry.memMB, entries: [] }
      groups.set(key, group)
    }
    group.entries.push(entry)
  }
  return [...groups.values()]
}
