// Finding 6: pack code fired another call's abortSignal: the abort BroadcastChannel's name
// is in workerData, and every worker of the service listens on it for any call id. The turn
// slots of calls waiting in a line (workers/shared-memory/turn.ts) are handed over the same way.
import { describe, expect, it } from 'vitest'
import { sleep } from '../helpers/host.js'
import { rawInvoke, STRICT, stillServes, withHost } from './walls-helpers.js'

describe("finding 6: pack code cannot fire another call's abortSignal", () => {
  for (const posture of ['none', 'strict'] as const) {
    it(`under ${posture}, abort notices posted for every call id leave another tenant's running call un-aborted`, async () => {
      await withHost({ env: posture === 'strict' ? STRICT : {} }, async (host) => {
        const victim = rawInvoke(host.port, 'abort-victim', { ms: 1500 }, { tenantId: 'tenant-b', runId: 'victim' })
        await sleep(300)
        const attack = await rawInvoke(host.port, 'abort-others', { upTo: 50, ms: 500 }, { tenantId: 'tenant-a', runId: 'attack' })
        expect.soft('error' in attack ? attack : attack.body?.kind, 'the attack call ran').toBeDefined()
        const answer = await victim
        expect.soft('error' in answer ? answer : answer.body, "the victim's answer").toEqual({ v: 2, kind: 'result', output: { aborted: false } })
        await stillServes(host)
      })
    })
  }

  it('under none, pack code finds no turn slots in workerData, so it cannot make a call taken back from a line run anyway', async () => {
    await withHost({}, async (host) => {
      const attack = await rawInvoke(host.port, 'turn-tamper', { ms: 200 }, { tenantId: 'tenant-a', runId: 'attack' })
      expect.soft('error' in attack ? attack : attack.body, "the attack's answer").toEqual({ v: 2, kind: 'result', output: { found: false } })
      await stillServes(host)
    })
  })
})
