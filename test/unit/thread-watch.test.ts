// The thread count behind "nothing a limited call started runs on" (src/pool/thread-watch.ts),
// read from this test process's own /proc entry: a thread the pool does not account for trips
// it after a few reads, the pool's own workers do not, and a count that never comes does.
import { Worker } from 'node:worker_threads'
import { afterEach, describe, expect, it } from 'vitest'
import { threadsOf, watchThreads, type ThreadWatch } from '../../src/pool/thread-watch.js'

const idleWorker = () => new Worker('setInterval(() => {}, 1000)', { eval: true })
let watch: ThreadWatch | undefined
let workers: Worker[] = []
afterEach(async () => {
  watch?.stop()
  await Promise.all(workers.map((w) => w.terminate()))
  workers = []
})

/** A watch on this process whose pool "has" `pool()` workers, answering each count at once. */
function watching(pool: () => number): { tripped: Promise<string>; watch: ThreadWatch } {
  let trip!: (why: string) => void
  const tripped = new Promise<string>((resolve) => (trip = resolve))
  const w: ThreadWatch = watchThreads(process.pid, () => setImmediate(() => w.counted(pool())), trip)
  w.readBase()
  watch = w
  return { tripped, watch: w }
}

describe('the thread count of a limited pack process', () => {
  it("reads this process's threads from /proc", () => {
    expect(threadsOf(process.pid)).toBeGreaterThan(0)
    expect(threadsOf(2 ** 30)).toBeUndefined()
  })

  it('a thread the pool does not account for trips the watch after its reads in a row', async () => {
    const { tripped, watch: w } = watching(() => 0)
    workers.push(idleWorker())
    await new Promise((r) => setTimeout(r, 100))
    w.check()
    expect(await tripped).toMatch(/^1 thread\(s\) beyond Node's own and its pool's workers$/)
  })

  it("the pool's own workers, counted by the pool, do not trip it", async () => {
    let tripped = false
    const w = watchThreads(
      process.pid,
      () => setImmediate(() => w.counted(workers.length)),
      () => (tripped = true),
    )
    w.readBase()
    watch = w
    workers.push(idleWorker(), idleWorker())
    await new Promise((r) => setTimeout(r, 100))
    for (let i = 0; i < 5; i++) {
      w.check()
      await new Promise((r) => setTimeout(r, 40))
    }
    expect(tripped).toBe(false)
  })

  it('a count the process never gives trips it: pack code that swallows the question hides nothing', async () => {
    let trip!: (why: string) => void
    const tripped = new Promise<string>((resolve) => (trip = resolve))
    const w = watchThreads(process.pid, () => undefined, trip)
    w.readBase()
    watch = w
    w.check()
    expect(await tripped).toMatch(/did not say its thread count within/)
  }, 10_000)
})
