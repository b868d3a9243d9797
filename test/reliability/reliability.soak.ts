// The soak (`npm run soak`): wire fuzzing and faults under load at length, then a drain, on
// loopback only and bounded by KINDGI_SOAK_SECONDS (default 300 s) plus fixed settle (~30 s
// per load round, for idle workers to retire) and drain (~20 s) phases. Prints one report.
import { afterAll, describe, expect, it } from 'vitest'
import { anyCase, PINNED_TENANT } from './generators.js'
import { fuzz, pollHealth, type Hosts } from './driver.js'
import { drainUnderLoad, faultsUnderLoad, spawnFaultHost, type DrainReport, type LoadReport } from './fault-load.js'
import { expectEverySlotFree, expectHealthyProcess, startFuzzHosts } from './fuzz-hosts.js'
import { tempDirs } from '../helpers/temp-dir.js'

const SECONDS = Number(process.env.KINDGI_SOAK_SECONDS ?? 300)
if (!Number.isFinite(SECONDS) || SECONDS < 30) throw new Error(`KINDGI_SOAK_SECONDS must be a number >= 30, not ${process.env.KINDGI_SOAK_SECONDS}`)
const SEED = process.env.KINDGI_SOAK_SEED === undefined ? undefined : Number(process.env.KINDGI_SOAK_SEED)
const FUZZ_MS = SECONDS * 400
const LOAD_ROUND_MS = SECONDS * 300
const CAP = 16

const report: { seconds: number; fuzz?: unknown; rounds: LoadReport[]; drain?: DrainReport; rssGrowthMB?: number } = { seconds: SECONDS, rounds: [] }
afterAll(() => {
  console.info(`soak report: ${JSON.stringify(report, null, 2)}`)
})

describe('soak: wire fuzzing', () => {
  it('every generated request gets a protocol message or a transport status; no crash, no hang, no slot held; /healthz throughout', async () => {
    const hosts: Hosts = await startFuzzHosts()
    const pollers = [pollHealth(hosts.plain), pollHealth(hosts.pinned)]
    try {
      const run = await fuzz(anyCase, hosts, { numRuns: 10_000_000, timeLimitMs: FUZZ_MS, seed: SEED })
      report.fuzz = run.tally
      expect(run.failure).toBeUndefined()
      expectHealthyProcess(hosts.plain)
      expectHealthyProcess(hosts.pinned)
      await expectEverySlotFree(hosts.plain)
      await expectEverySlotFree(hosts.pinned, PINNED_TENANT)
      for (const poller of pollers) expect((await poller.stop()).failures).toEqual([])
    } finally {
      await Promise.all([hosts.plain.stop(), hosts.pinned.stop()])
    }
  })
})

describe('soak: faults under load', () => {
  // Removed after the test, which stops the host that writes in them.
  const tempDir = tempDirs()
  it('two rounds of thousands of calls, 48 at a time: right answers or 503s, the cap holds, no worker leaks, memory does not grow between rounds', async () => {
    const host = await spawnFaultHost(CAP)
    try {
      for (let round = 0; round < 2; round++) {
        const seed = (SEED ?? Date.now()) + round * 1_000
        const r = await faultsUnderLoad(host, {
          cap: CAP,
          calls: 1_000_000,
          concurrency: 48,
          timeLimitMs: LOAD_ROUND_MS,
          seed,
          settleMs: 60_000,
          dir: tempDir('kph-faults-'),
        })
        report.rounds.push(r)
        expect(r.after.threads).toBeLessThanOrEqual(r.before.threads)
      }
      const [first, second] = report.rounds as [LoadReport, LoadReport]
      report.rssGrowthMB = second.after.rssMB - first.after.rssMB
      // A leak in the front grows with calls; a second round as long as the first must not add much.
      expect(report.rssGrowthMB).toBeLessThan(48)
    } finally {
      await host.stop()
    }
  })
})

describe('soak: drain', () => {
  it('a SIGTERM five seconds into the load drains cleanly', async () => {
    report.drain = await drainUnderLoad({ cap: CAP, concurrency: 48, afterMs: 5_000, seed: SEED ?? 11 })
  })
})
