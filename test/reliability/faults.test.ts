// Faults under load (issue 8), the part `npm test` runs: ~1000 calls, 24 at a time against a
// cap of 16, mixing good calls with every way pack code fails and callers that leave. Each call
// gets its one right answer or a 503, the cap holds, no worker leaks and memory stays bounded.
// `npm run soak` runs the same, longer and larger.
import { afterAll, describe, expect, it } from 'vitest'
import type { Host } from '../helpers/host.js'
import { faultsUnderLoad, spawnFaultHost } from './fault-load.js'

const CAP = 16
const hosts: Host[] = []
afterAll(async () => {
  await Promise.all(hosts.map((h) => h.stop()))
})

describe('faults under load', () => {
  it('every call gets its one right answer or a 503, the cap is never exceeded, no worker leaks and memory stays bounded', async () => {
    const host = await spawnFaultHost(CAP)
    hosts.push(host)
    const seed = Number(process.env.KINDGI_FAULT_SEED ?? Date.now() % 1_000_000)
    const report = await faultsUnderLoad(host, { cap: CAP, calls: 1_000, concurrency: 24, timeLimitMs: 40_000, seed, settleMs: 45_000 })
    console.info(`faults under load: ${JSON.stringify(report)}`)
    expect(report.calls).toBeGreaterThanOrEqual(300)
    expect(report.after.threads).toBeLessThanOrEqual(report.before.threads)
    // Worker heaps live in this process too; once they retired the process is back within a margin.
    expect(report.after.rssMB).toBeLessThan(report.before.rssMB + 96)
  }, 180_000)
})
