// Pool policy: how entries are grouped into workers, and how many strict spares to keep.
import { describe, expect, it } from 'vitest'
import { planGroups } from '../../src/pool/plan.js'
import { MAX_SPARES, spareTarget } from '../../src/pool/spare-sizing.js'
import type { RunnableEntry } from '../../src/protocol/runnable-entry.js'
import { toolEntry } from '../helpers/entries.js'

const entry = (id: string, extra: Partial<RunnableEntry> = {}) => toolEntry(id, '/p', extra)

describe('planGroups', () => {
  it('puts `none` tools in one shared group, split by heap limit, cpuMs and network policy', () => {
    const groups = planGroups([
      entry('a'),
      entry('b'),
      entry('c', { memMB: 64 }),
      entry('d', { networkNone: true }),
      entry('e', { memMB: 64 }),
      entry('f', { cpuMs: 100 }),
    ])
    expect(groups.map((g) => [g.key, g.entries.map((e) => e.id)])).toEqual([
      ['none', ['a', 'b']],
      ['none:memMB=64', ['c', 'e']],
      ['none:network=none', ['d']],
      ['none:cpuMs', ['f']],
    ])
  })
  it('gives every context-isolated tool its own group; never mixes postures', () => {
    const groups = planGroups([
      entry('a', { posture: 'context-isolated' }),
      entry('b', { posture: 'context-isolated' }),
      entry('c', { posture: 'strict' }),
      entry('d'),
    ])
    expect(groups.map((g) => g.key)).toEqual(['context-isolated:tool:a@1.0.0', 'context-isolated:tool:b@1.0.0', 'strict', 'none'])
    expect(groups.map((g) => g.posture)).toEqual(['context-isolated', 'context-isolated', 'strict', 'none'])
  })
})

describe('spareTarget', () => {
  it('keeps one spare when idle', () => {
    expect(spareTarget([], 10_000, 30)).toBe(1)
  })
  it('follows arrivals × start time, plus one', () => {
    const now = 10_000
    const calls = Array.from({ length: 500 }, (_, i) => now - i * 10) // 100 calls/s over the window
    expect(spareTarget(calls, now, 30)).toBe(Math.ceil(0.1 * 30) + 1)
  })
  it('forgets calls older than the window and never passes the bound', () => {
    const now = 100_000
    const old = [1, 2, 3]
    expect(spareTarget(old, now, 30)).toBe(1)
    expect(old).toEqual([])
    const flood = Array.from({ length: 5000 }, () => now)
    expect(spareTarget(flood, now, 500)).toBe(MAX_SPARES)
  })
})
