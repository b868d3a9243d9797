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
function watching(): { cpu: { ms: number; v8: number; workers: Array<{ tid: string; cpuMs: number }> }; over: string[]; watch: HelperCpuWatch } {
  const cpu = { ms: 0, v8: 0, workers: [] as Array<{ tid: string; cpuMs: number }> }
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
  it('a worker thread that starts earns credit for V8’s threads as it spends CPU of its own: a large module’s load, with no call', async () => {
    // A pack whose cpuMs tool imported date-fns failed its boot: its workers spent ~1 s each loading it, V8's threads ~300 ms (stop 40).
    const { cpu, over } = watching()
    cpu.workers = [
      { tid: '101', cpuMs: 800 },
      { tid: '102', cpuMs: 800 },
    ]
    cpu.v8 += 1_200
    await reads(3)
    expect(over).toEqual([])
  })
  it('one that spends little of its own earns little: V8’s threads’ work past it is owed', async () => {
    // WebAssembly compiles handed to V8's threads just after a process started were paid for by its starts (stop 40's second pass).
    const { cpu, over } = watching()
    cpu.workers = [
      { tid: '111', cpuMs: 30 },
      { tid: '112', cpuMs: 30 },
    ]
    cpu.v8 += 800
    await reads(3)
    expect(over).toHaveLength(1)
  })
  it('workers ended and started again earn no more than a few starts’ credit at a time', async () => {
    const { cpu, over } = watching()
    // A new worker every read or two, each spending 1 s of its own and V8's threads 1 s: some 6.7 s of theirs every ten reads, against 4 s of starts' credit.
    for (let i = 0; i < 12; i++) {
      cpu.workers = [{ tid: `${200 + i}`, cpuMs: 1_000 }]
      cpu.v8 += 1_000
      await reads(1)
    }
    expect(over).toHaveLength(1)
  })
  it('a start’s credit pays for V8’s threads only: libuv’s pool loads no module', async () => {
    // A process killed and started again brought its pool work fresh credit (stop 40's second pass).
    const { cpu, over } = watching()
    cpu.workers = [
      { tid: '301', cpuMs: 800 },
      { tid: '302', cpuMs: 800 },
    ]
    cpu.ms += 600
    await reads(3)
    expect(over).toHaveLength(1)
  })
})
