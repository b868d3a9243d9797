// Which workers run which entries (docs/spec/CONTRACT.md §6): policy only, no mechanics. `none` entries
// share warm workers, split only where a worker-wide setting differs (heap limit, network
// guard), and tools with cpuMs apart from tools without: a process whose tools all have limits
// has its threads counted from outside (pack-process-group.ts), which no other tool's nested
// Workers must trip. `strict` entries are split the same way: each call gets a fresh worker anyway, so
// sharing a group only shares which modules a spare has imported, and keeps the number of
// spares bounded whatever the number of tools. `context-isolated` entries get their own.
import type { RunnableEntry } from '../protocol/runnable-entry.js'

export type GroupPlan = { key: string; posture: RunnableEntry['posture']; memMB: number | undefined; entries: RunnableEntry[] }

export function planGroups(entries: RunnableEntry[]): GroupPlan[] {
  const groups = new Map<string, GroupPlan>()
  for (const entry of entries) {
    const settings = `${entry.memMB !== undefined ? `:memMB=${entry.memMB}` : ''}${entry.cpuMs !== undefined ? ':cpuMs' : ''}${entry.networkNone ? ':network=none' : ''}`
    const key = entry.posture === 'context-isolated' ? `context-isolated:${entry.key}` : `${entry.posture}${settings}`
    let group = groups.get(key)
    if (group === undefined) {
      group = { key, posture: entry.posture, memMB: entry.memMB, entries: [] }
      groups.set(key, group)
    }
    group.entries.push(entry)
  }
  return [...groups.values()]
}
