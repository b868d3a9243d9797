// The watch behind "a limited tool's code runs on its worker between calls at most briefly"
// (workers/idle-watch.ts), on real worker threads: one that spins while the pool says it runs
// no call is handed over, and so is one that spins while cheap calls keep reaching it (their
// busy time does not account for its CPU); one that sleeps is not, nor one that spins for the
// call it runs, nor one that spins before its first call within its start's allowance; and
// one that holds more than memMB while parked is handed over for memory.
import { Worker } from 'node:worker_threads'
import { afterEach, describe, expect, it } from 'vitest'
import { type IdleWatch, watchIdleWorkers, type WorkerCalls } from '../../workers/idle-watch.js'

/** Spins for 3 s from its event loop (whose busy time the pool counts for the call it runs). */
const spinning = () => new Worker('setTimeout(() => { const end = Date.now() + 3000; while (Date.now() < end); })', { eval: true })
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

/** The pool's word on a worker no call is on, `reached` calls having reached it, whose busy time was `callsBusyMs`. */
const idle = (reached = 1, callsBusyMs = 0): WorkerCalls => ({ busy: false, ending: false, reached, callsBusyMs })

describe('a limited pool reads its workers’ CPU from outside them, and counts what their calls do not account for', () => {
  it('a worker spinning while it runs no call is handed over to be ended', async () => {
    expect(await handedOver(spinning(), () => idle())).toBe('cpu')
  })
  it('a worker parked between calls is not', async () => {
    expect(await handedOver(sleeping(), () => idle())).toBeUndefined()
  })
  it('a worker spinning for the call it runs is not: its CPU is that call’s busy time, and cpuMs is that call’s', async () => {
    const worker = spinning()
    expect(
      await handedOver(worker, () => ({ busy: true, ending: false, reached: 1, callsBusyMs: worker.performance.eventLoopUtilization().active })),
    ).toBeUndefined()
  })
  it('a worker spinning between cheap calls that keep reaching it is handed over: their busy time does not account for its CPU', async () => {
    // Before stop 39 a call reaching a worker between two reads reset its count, and a tool called every 0.4 s spent a whole core between its calls.
    let reached = 1
    expect(await handedOver(spinning(), () => idle(reached++, reached * 0.5))).toBe('cpu')
  })
  it('a call’s busy time beyond its CPU (it waited) is no credit for spinning after it', async () => {
    // Read at 100 ms (none yet), at 200 ms (a minute of it: more than the worker spent), at 300 ms.
    const from = Date.now()
    expect(await handedOver(spinning(), () => idle(2, Date.now() - from > 150 ? 60_000 : 0))).toBe('cpu')
  })
  it('a worker the pool is ending is left to it', async () => {
    expect(await handedOver(spinning(), () => ({ ...idle(), ending: true }))).toBeUndefined()
  })
  it('a worker spinning before its first call is not, within its start’s allowance', async () => {
    expect(await handedOver(spinning(), () => idle(0))).toBeUndefined()
  })
  it('a parked worker holding more than memMB in Buffers is handed over for memory; one holding less is not', async () => {
    expect(await handedOver(holding(96), () => idle(), 64)).toBe('memory')
    watch?.stop()
    expect(await handedOver(holding(16), () => idle(), 64)).toBeUndefined()
  })
})
