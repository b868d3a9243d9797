// The thread count behind "nothing a limited call started runs on" (src/pool/thread-watch.ts),
// read from this test process's own /proc entry: a thread the pool does not account for trips
// it after a few reads, the pool's own workers do not, and a count that never comes does; with
// memMB, memory held past what the process's workers may hold trips it too, whatever holds it.
import { Worker } from 'node:worker_threads'
import { afterEach, describe, expect, it } from 'vitest'
import { PROCESS_OVERHEAD_MB, threadsOf, type ThreadWatch, type WatchTrip, watchThreads } from '../../src/pool/thread-watch.js'

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

  it('with memMB, memory the process holds past what its workers may hold trips it for memory; memory within it does not', async () => {
    const trips: Array<[string, WatchTrip]> = []
    const w = watchThreads(
      process.pid,
      () => setImmediate(() => w.counted(0)),
      (why, trip) => trips.push([why, trip]),
      16,
    )
    w.readBase()
    watch = w
    const within = Buffer.alloc((PROCESS_OVERHEAD_MB / 2) * 1024 * 1024, 1)
    for (let i = 0; i < 4; i++) {
      w.check()
      await new Promise((r) => setTimeout(r, 40))
    }
    expect(trips, `${within.length} bytes held`).toEqual([])
    // A SharedArrayBuffer, as the attack held: no heap's or external memory, every page written.
    const past = new Uint8Array(new SharedArrayBuffer((PROCESS_OVERHEAD_MB + 64) * 1024 * 1024)).fill(1)
    for (let i = 0; i < 6 && trips.length === 0; i++) {
      w.check()
      await new Promise((r) => setTimeout(r, 60))
    }
    expect(trips, `${past.length} more bytes held`).toEqual([
      [expect.stringMatching(/^it held \d+ MB, past the \d+ MB its 0 worker\(s\) may hold under memMB 16$/), 'memory'],
    ])
  })
})
