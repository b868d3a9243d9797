// A throw that no call is waiting for (a timer a call left behind after it answered) is pack
// code failing, but not the failure of whichever call its warm worker runs next (docs/spec/CONTRACT.md §6:
// "no other call is touched"). Regression tests for what the faults-under-load mix found.
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { FIXTURES, invoke, sleep, within, spawnHost, type Host } from '../helpers/host.js'

const FAULT_INDEX = `${FIXTURES}/fault-pack/index.json`

let host: Host
beforeAll(async () => {
  // A cap of 2 means exactly two shared workers: the next calls are sure to land on the one
  // whose timer is pending.
  host = await spawnHost({ index: FAULT_INDEX, env: { KINDGI_PACK_SERVICE_MAX_CONCURRENCY: '2' } })
})
afterAll(async () => {
  await host?.stop()
})

describe('bug: a throw from a timer after a call answered killed the next call on that worker', () => {
  it('the calls running when it fires get their own answers, and the worker is replaced after them', async () => {
    for (let round = 0; round < 3; round++) {
      const late = await invoke(host, 'late-throw', { id: `late-${round}`, delayMs: 150 })
      expect(late.body).toEqual({ v: 2, kind: 'result', output: { id: `late-${round}` } })
      const calls = await Promise.all(['a', 'b'].map((k) => invoke(host, 'record', { id: `${k}-${round}`, ms: 500, journal: '/dev/null' })))
      expect(calls.map((c) => c.body)).toEqual([
        { v: 2, kind: 'result', output: { id: `a-${round}` } },
        { v: 2, kind: 'result', output: { id: `b-${round}` } },
      ])
    }
    await within(5_000, () => host.lines.filter((l) => l.kind === 'worker-replaced').length >= 3)
    const replaced = host.lines.filter((l) => l.kind === 'worker-replaced')
    expect(replaced.length).toBeGreaterThanOrEqual(3)
    expect(replaced.every((l) => l.reason === 'crash')).toBe(true)
  }, 30_000)

  it('an idle worker whose timer throws serves its next call, then is replaced', async () => {
    const before = host.lines.filter((l) => l.kind === 'worker-replaced').length
    await invoke(host, 'late-throw', { id: 'idle', delayMs: 10 })
    await sleep(200) // the timer fired while the worker was idle
    const calls = await Promise.all(['c', 'd'].map((k) => invoke(host, 'record', { id: k, ms: 50, journal: '/dev/null' })))
    expect(calls.map((c) => c.body.kind)).toEqual(['result', 'result'])
    await within(5_000, () => host.lines.filter((l) => l.kind === 'worker-replaced').length > before)
    expect(host.lines.filter((l) => l.kind === 'worker-replaced').length).toBeGreaterThan(before)
  })

  it("a throw from the running call's own timer still ends that call with handler-throw", async () => {
    const res = await invoke(host, 'reject', { id: 'own' })
    expect(res.body).toMatchObject({ code: 'handler-throw', toolId: 'reject' })
    expect(res.body.message).toContain('nobody handles this rejection')
  })
})
