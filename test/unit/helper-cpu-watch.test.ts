// The ledger behind "cpuMs counts the CPU a call hands to other threads"
// (src/pool/helper-cpu-watch.ts), on a CPU time the test sets: CPU within the credit of the calls
// in flight passes, CPU past it kills the process, a call's credit pays for what the read after
// its end shows and then ends, a small allowance a read is the process's own, and small debts
// far apart do not add up.
import { afterEach, describe, expect, it } from 'vitest'
import { type HelperCpuWatch, watchHelperCpu } from '../../src/pool/helper-cpu-watch.js'

let watch: HelperCpuWatch | undefined
afterEach(() => watch?.stop())

/**
 * A watch read every 20 ms whose libuv pool has spent `cpu.ms` in all and V8's threads `cpu.v8`,
 * with `cpu.workers` its worker threads; `over` holds why it tripped, once it has.
 */
function watching(): { cpu: { ms: number; v8: number; workers: string[] }; over: string[]; watch: HelperCpuWatch } {
  const cpu = { ms: 0, v8: 0, workers: [] as string[] }
  const over: string[] = []
  watch = watchHelperCpu(1, (why) => over.push(why), { everyMs: 20, read: () => ({ poolMs: cpu.ms, v8Ms: cpu.v8, workers: cpu.workers }) })
  return { cpu, over, watch }
}

const reads = (n: number) => new Promise((resolve) => setTimeout(resolve, n * 20 + 10))

describe("a cpuMs pack process's libuv pool CPU is charged to its calls in flight", () => {
  it('pool CPU within the cpuMs of the calls in flight passes', async () => {
    const { cpu, over, watch: w } = watching()
    w.open(1, 300)
    w.open(2, 300)
    cpu.ms += 550
    await reads(2)
    expect(over).toEqual([])
  })
  it('pool CPU past their cpuMs kills the process, naming how much', async () => {
    const { cpu, over, watch: w } = watching()
    w.open(1, 200)
    cpu.ms += 600
    await reads(2)
    expect(over).toEqual([expect.stringMatching(/^its libuv pool and V8's threads spent \d+ ms of CPU in 0.08 s past the cpuMs of its calls$/)])
  })
  it('what a call awaited, read only after it was freed, is paid for by its credit', async () => {
    // A red-team pass: a tool awaiting a gzip of 4 MB (100 ms of pool CPU) had its process killed every ten calls.
    const { cpu, over, watch: w } = watching()
    for (let i = 0; i < 6; i++) {
      w.open(i, 1000)
      cpu.ms += 200
      w.close(i)
      await reads(1)
    }
    expect(over).toEqual([])
  })
  it('a call’s credit ends a read after it does: work it left running after its answer is paid for by no one', async () => {
    const { cpu, over, watch: w } = watching()
    w.open(1, 10_000)
    w.close(1)
    await reads(1)
    cpu.ms += 400
    await reads(2)
    expect(over).toHaveLength(1)
  })
  it('small debts far apart do not add up', async () => {
    const { cpu, over } = watching()
    for (let i = 0; i < 4; i++) {
      cpu.ms += 200
      await reads(5)
    }
    expect(over).toEqual([])
  })
  it('with no call in flight, a little pool CPU a read is the process’s own', async () => {
    const { cpu, over } = watching()
    for (let i = 0; i < 10; i++) {
      cpu.ms += 20
      await reads(1)
    }
    expect(over).toEqual([])
  })
  it('a worker thread that starts brings credit for its start: a large module’s collection on V8’s threads, with no call', async () => {
    // A pack whose cpuMs tool imported date-fns failed its boot: V8's threads spent some 300 ms a worker loading it (stop 40).
    const { cpu, over } = watching()
    cpu.workers = ['101', '102']
    await reads(1)
    cpu.v8 += 1_500
    await reads(3)
    expect(over).toEqual([])
  })
  it('workers ended and started again earn no more than a few starts’ credit at a time', async () => {
    const { cpu, over } = watching()
    // A new worker every read or two, each with 1 s of V8's CPU: some 6.7 s every ten reads, against 4 s of starts' credit.
    for (let i = 0; i < 12; i++) {
      cpu.workers = [`${200 + i}`]
      cpu.v8 += 1_000
      await reads(1)
    }
    expect(over).toHaveLength(1)
  })
  it('a start’s credit pays for V8’s threads only: libuv’s pool loads no module', async () => {
    // A process killed and started again brought its pool work fresh credit (stop 40's second pass).
    const { cpu, over } = watching()
    cpu.workers = ['301', '302']
    await reads(1)
    cpu.ms += 600
    await reads(3)
    expect(over).toHaveLength(1)
  })
})
