// Finding 12: module top-level code in pre-warmed strict spares burnt CPU with no call
// running (the spare-burn pack spins 40 ms of every 50 once loaded).
import { describe, expect, it } from 'vitest'
import { FIXTURES, sleep } from '../helpers/host.js'
import { STRICT, treeCpuMs, withHost } from './walls-helpers.js'

async function idleCpuMs(index: string): Promise<number> {
  return withHost({ env: STRICT, index }, async (host) => {
    await sleep(1000) // boot is over
    const before = treeCpuMs(host.proc.pid!)
    await sleep(2000)
    return treeCpuMs(host.proc.pid!) - before
  })
}

describe('finding 12: pack code burns no CPU while no call of it runs', () => {
  it('(control, passes today) under strict, a pack without load-time code leaves the service under 15 % of a core over 2 s', async () => {
    expect(await idleCpuMs(`${FIXTURES}/basic-pack/index.json`)).toBeLessThan(300)
  })

  it("under strict, with no call at all, the service's processes use under 15 % of a core over 2 s", async () => {
    const used = await idleCpuMs(`${FIXTURES}/walls-spare-burn-pack/index.json`)
    expect(used, "CPU ms used by the host's processes in 2 s with no call").toBeLessThan(300)
  })
})
