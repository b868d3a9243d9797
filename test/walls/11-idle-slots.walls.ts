// Finding 11: two calls sitting in Atomics.wait (no CPU) held both worker-thread slots
// (KINDGI_PACK_WORKER_THREADS=2): another tenant's trivial call waited up to its deadline.
import { describe, expect, it } from 'vitest'
import { sleep } from '../helpers/host.js'
import { rawInvoke, STRICT, stillServes, withHost } from './walls-helpers.js'

describe('finding 11: calls that hold a thread without computing do not starve other tenants', () => {
  it("under strict with 2 worker threads, two calls parked in Atomics.wait for 4 s leave another tenant's echo answered within 2.5 s", async () => {
    await withHost({ env: { ...STRICT, KINDGI_PACK_WORKER_THREADS: '2' } }, async (host) => {
      const parked = [1, 2].map((i) => rawInvoke(host.port, 'atomics-park', { ms: 4000 }, { tenantId: 'tenant-a', runId: `park-${i}` }))
      await sleep(300)
      const started = Date.now()
      const echo = await rawInvoke(host.port, 'echo', { trivial: true }, { tenantId: 'tenant-b', runId: 'victim' }, 3_000)
      const took = Date.now() - started
      expect
        .soft('error' in echo ? echo : echo.body, "the victim's answer")
        .toEqual({ v: 2, kind: 'result', output: { input: { trivial: true }, tenantId: 'tenant-b' } })
      // Unwalled, the echo waits for its 3 s deadline (the parks end at ~3.7 s); 2.5 s leaves a loaded machine room.
      expect.soft(took, 'ms the victim waited').toBeLessThan(2500)
      await Promise.all(parked)
      await stillServes(host)
    })
  })
})
