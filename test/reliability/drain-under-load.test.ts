// A SIGTERM in the middle of faults under load (issue 8): calls in flight get their right
// answer, new ones a 503 draining, then `stopped` and exit 0 within the 8 s drain.
import { describe, expect, it } from 'vitest'
import { drainUnderLoad } from './fault-load.js'

describe('a SIGTERM in the middle of the load', () => {
  it('drains: calls in flight get their right answer, new ones 503 draining, then stopped and exit 0', async () => {
    const report = await drainUnderLoad({ cap: 16, concurrency: 24, afterMs: 1_500, seed: 7 })
    console.info(`drain under load: ${JSON.stringify(report)}`)
    expect(report.exitCode).toBe(0)
  }, 60_000)
})
