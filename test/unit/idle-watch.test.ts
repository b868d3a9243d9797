// The watch behind "a limited tool's code runs on its worker between calls at most briefly"
// (workers/idle-watch.ts), on real worker threads: one that spins while the pool says it runs
// no call is handed over, one that sleeps is not, nor one that spins while a call runs or while
// calls keep reaching it, nor one that spins before its first call within its start's
// allowance; and one that holds more than memMB while parked is handed over for memory.
import { Worker } from 'node:worker_threads'
import { afterEach, describe, expect, it } from 'vitest'
import { type IdleWatch, watchIdleWorkers, type WorkerCalls } from '../../workers/idle-watch.js'

const spinning = () => new Worker('const end = Date.now() + 3000; while (Date.now() < end);', { eval: true })
const sleeping = () => new Worker('setInterval(() => {}, 1000)', { eval: true })
/** Holds `mb` MiB of Buffers, parked in Atomics.wait as Piscina parks an idle worker. */
const holding = (mb: number) =>
  new Worker(`globalThis.held = Buffer.alloc(${mb} * 1024 * 1024, 1); Atomics.wait(new Int32Array(new SharedArrayBuffer(4)), 0, 0)`, { eval: true })
let watch: IdleWatch | undefined
let workers: Worker[] = []
afterEach(async () => {
  watch?.stop()
  await Promise.all(workers.map((w) => w.terminate()))
  workers = []
})

/** Watches `worker` every 100 ms (30 ms of CPU allowed between reads), the pool saying `calls()` of it; resolves with the limit it was handed over for within `ms`, if any. */
function handedOver(worker: Worker, calls: () => WorkerCalls, memMB?: number, ms = 1200): Promise<'cpu' | 'memory' | undefined> {
  workers.push(worker)
  return new Promise((resolve) => {
    const timer = setTimeout(() => resolve(undefined), ms)
    watch = watchIdleWorkers({
      workers: () => [worker],
      calls,
      memMB,
      passed: (_worker, limit) => {
        clearTimeout(timer)
        resolve(limit)
      },
      everyMs: 100,
      cpuLimitMs: 30,
    })
  })
}

describe('a limited pool reads its idle workers’ CPU from outside them', () => {
  it('a worker spinning while it runs no call is handed over to be ended', async () => {
    expect(await handedOver(spinning(), () => ({ busy: false, reached: 1 }))).toBe('cpu')
  })
  it('a worker parked between calls is not', async () => {
    expect(await handedOver(sleeping(), () => ({ busy: false, reached: 1 }))).toBeUndefined()
  })
  it('a worker spinning for the call it runs is not: cpuMs is that call’s', async () => {
    expect(await handedOver(spinning(), () => ({ busy: true, reached: 1 }))).toBeUndefined()
  })
  it('a worker that calls keep reaching is not: its CPU is theirs', async () => {
    let reached = 1
    expect(await handedOver(spinning(), () => ({ busy: false, reached: reached++ }))).toBeUndefined()
  })
  it('a worker spinning before its first call is not, within its start’s allowance', async () => {
    expect(await handedOver(spinning(), () => ({ busy: false, reached: 0 }))).toBeUndefined()
  })
  it('a parked worker holding more than memMB in Buffers is handed over for memory; one holding less is not', async () => {
    expect(await handedOver(holding(96), () => ({ busy: false, reached: 1 }), 64)).toBe('memory')
    watch?.stop()
    expect(await handedOver(holding(16), () => ({ busy: false, reached: 1 }), 64)).toBeUndefined()
  })
})
