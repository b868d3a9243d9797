// The turn slots of calls waiting behind another (workers/shared-memory/turn.ts), on two real
// threads: a worker takes the turns of many calls while this thread takes the same calls back,
// at the same time. Each call is decided by exactly one side, and its slot says which, as the
// layout says (1: the worker's, 2: taken back). And a worker about to exit waits until this
// thread has read the settlement of the call it answered last, and for no later holder of its slot.
import { Worker } from 'node:worker_threads'
import { describe, expect, it } from 'vitest'
import { createTurns } from '../../workers/shared-memory/turn.js'

const TURN_MODULE = new URL('../../dist/workers/shared-memory/turn.js', import.meta.url).href
const CALLS = 20_000

// The worker waits for the start flag, then takes every turn it can, in order, as this thread does.
const WORKER = `
const { parentPort, workerData } = require('node:worker_threads')
import(workerData.module).then(({ takeTurn }) => {
  parentPort.postMessage('ready')
  Atomics.wait(workerData.start, 0, 0)
  const won = []
  const view = new Int32Array(workerData.buffer)
  for (const slot of workerData.slots) if (takeTurn(view, slot) !== undefined) won.push(slot)
  parentPort.postMessage(won)
})
`

describe('a call waiting its turn, decided by its worker and the pack process at once', () => {
  it('is decided by exactly one of them, and its flag says which', async () => {
    const turns = createTurns(CALLS)
    const slots = Array.from({ length: CALLS }, () => turns.claim() as number)
    const start = new Int32Array(new SharedArrayBuffer(4))
    const worker = new Worker(WORKER, { eval: true, workerData: { module: TURN_MODULE, buffer: turns.buffer, slots, start } })
    const won = new Promise<number[]>((resolve, reject) => {
      worker.on('message', (message) => {
        if (Array.isArray(message)) resolve(message as number[])
      })
      worker.once('error', reject)
    })
    await new Promise<void>((resolve) => worker.once('message', () => resolve()))
    Atomics.store(start, 0, 1)
    Atomics.notify(start, 0)
    const takenBack: number[] = []
    for (const slot of slots) if (turns.takeBack(slot)) takenBack.push(slot)
    const workers = await won
    await worker.terminate()

    const byWorker = new Set(workers)
    expect(workers.length + takenBack.length).toBe(CALLS)
    expect(takenBack.filter((i) => byWorker.has(i))).toEqual([])
    const view = new Int32Array(turns.buffer)
    const flag = (slot: number) => Atomics.load(view, 2 * slot)
    expect(workers.filter((i) => flag(i) !== 1)).toEqual([])
    expect(takenBack.filter((i) => flag(i) !== 2)).toEqual([])
    // Once decided, neither side can move it again; a slot given again starts undecided.
    expect(turns.takeBack(workers[0] ?? (takenBack[0] as number))).toBe(false)
    expect(turns.claim()).toBe(undefined)
    turns.release(slots[0] as number)
    expect(turns.claim()).toBe(slots[0])
    expect(flag(slots[0] as number)).toBe(0)
  })
})

// The worker takes the turn of a call, then waits as it would in its `exit`, and says how long.
const EXITING = `
const { parentPort, workerData } = require('node:worker_threads')
import(workerData.module).then(({ takeTurn, awaitSettled }) => {
  const view = new Int32Array(workerData.buffer)
  const turn = takeTurn(view, workerData.slot)
  parentPort.postMessage('took')
  Atomics.wait(workerData.start, 0, 0)
  const from = performance.now()
  awaitSettled(view, turn, workerData.ms)
  parentPort.postMessage(performance.now() - from)
})
`

/** A worker that took `slot`'s turn; `exiting()` lets it wait for the settlement, and gives how long it waited. */
async function tookTurn(buffer: SharedArrayBuffer, slot: number, ms: number) {
  const start = new Int32Array(new SharedArrayBuffer(4))
  const worker = new Worker(EXITING, { eval: true, workerData: { module: TURN_MODULE, buffer, slot, ms, start } })
  const messages: unknown[] = []
  let arrived: () => void = () => undefined
  worker.on('message', (m) => {
    messages.push(m)
    arrived()
  })
  const next = async () => {
    while (messages.length === 0) await new Promise<void>((resolve) => (arrived = resolve))
    return messages.shift()
  }
  expect(await next()).toBe('took')
  return {
    exiting: async () => {
      Atomics.store(start, 0, 1)
      Atomics.notify(start, 0)
      const waited = (await next()) as number
      await worker.terminate()
      return waited
    },
  }
}

describe('a worker about to exit, after posting the answer of a call it ran', () => {
  it('waits until the pack process has read how that call settled, and no longer', async () => {
    const turns = createTurns(1)
    const slot = turns.claim() as number
    const worker = await tookTurn(turns.buffer, slot, 5_000)
    const waited = worker.exiting()
    // Read 500 ms on; the worker counts from when it wakes, which a loaded machine delays.
    await new Promise((resolve) => setTimeout(resolve, 500))
    turns.release(slot)
    const ms = await waited
    expect(ms).toBeGreaterThanOrEqual(250)
    expect(ms).toBeLessThan(2_000)
  })

  it('does not wait for the call that holds its slot next, on this worker or another', async () => {
    const turns = createTurns(1)
    const slot = turns.claim() as number
    const worker = await tookTurn(turns.buffer, slot, 5_000)
    turns.release(slot)
    // Given again, and its turn taken: the state is the worker's again, for another call.
    expect(turns.claim()).toBe(slot)
    const view = new Int32Array(turns.buffer)
    const { takeTurn } = await import('../../workers/shared-memory/turn.js')
    expect(takeTurn(view, slot)).toBeDefined()
    expect(await worker.exiting()).toBeLessThan(1_000)
  })

  it('waits no longer than its bound when the settlement is never read', async () => {
    const turns = createTurns(1)
    const slot = turns.claim() as number
    const worker = await tookTurn(turns.buffer, slot, 300)
    const ms = await worker.exiting()
    expect(ms).toBeGreaterThanOrEqual(250)
    expect(ms).toBeLessThan(2_000)
  })
})
