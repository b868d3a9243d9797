// The token is nowhere in the memory of any process that runs pack code: read from outside
// (/proc/<pid>/mem, as root), not from inside, so no in-process trick hides it or misses it.
// A canary that pack code builds and holds proves the scan reads the right processes.
import { randomBytes } from 'node:crypto'
import { describe, expect, it } from 'vitest'
import { sleep, TOKEN, within } from '../helpers/host.js'
import { encodings, packCodeProcesses, scanMemory } from './memory-scan.js'
import { rawInvoke, STRICT, withHost } from './walls-helpers.js'

describe('the service token is in no process that runs pack code', () => {
  it.skipIf(process.getuid?.() !== 0)(
    "under strict, a scan of the pack-code processes' memory finds the pack-held canary and never the token",
    async () => {
      await withHost({ env: STRICT }, async (host) => {
        const canary = `walls-canary-${randomBytes(8).toString('hex')}`
        // The request carries the canary in two parts: only the pack code that joins them holds it whole.
        const holding = rawInvoke(
          host.port,
          'canary-hold',
          { parts: [canary.slice(0, 13), canary.slice(13)], ms: 10_000 },
          { tenantId: 'tenant-a', runId: 'canary' },
          25_000,
        )
        await sleep(600)
        const needles = [...encodings(canary), ...encodings(TOKEN)]
        let canarySeen = false
        let scanned = 0
        const tokenIn = new Set<number>()
        // Scanned again until the canary is seen (its call may start late on a loaded machine), for
        // at most 7 s of its 10-s hold (a scan may take seconds); the token must be in none of the
        // processes of any scan.
        await within(7_000, () => {
          const { pids, how } = packCodeProcesses(host.proc.pid!)
          scanned = Math.max(scanned, pids.length)
          for (const pid of pids) {
            const { found, bytes } = scanMemory(pid, needles)
            console.info(`memory scan: pid ${pid} (found by ${how}), ${Math.round(bytes / 1048576)} MiB read, needles found: ${[...found].join(',') || 'none'}`)
            if (found.has(0) || found.has(1)) canarySeen = true
            if (found.has(2) || found.has(3)) tokenIn.add(pid)
          }
          return canarySeen
        })
        expect(scanned, 'processes that run pack code').toBeGreaterThan(0)
        expect(canarySeen, 'the canary pack code holds was found (the scan reads the right processes)').toBe(true)
        expect.soft([...tokenIn], 'pack-code processes whose memory holds the token').toEqual([])
        await holding
      })
    },
    60_000,
  )
})
