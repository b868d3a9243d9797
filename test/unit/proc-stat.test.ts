// What the front reads of a pack process from /proc (src/pool/proc-stat.ts), read here of this
// test process: its helper threads' CPU grows with work handed to libuv's pool (async pbkdf2)
// and to V8's platform threads (async WebAssembly compiles), whatever the runtime names them
// (Node 26 prefixes V8's with `node-`), and not with work on this thread; its worker threads
// are told apart from them.
import { pbkdf2 } from 'node:crypto'
import { Worker } from 'node:worker_threads'
import { describe, expect, it } from 'vitest'
import { helperThreads, threadsAndResident } from '../../src/pool/proc-stat.js'

const helpers = () => {
  const read = helperThreads(process.pid)
  return (read?.poolMs ?? 0) + (read?.v8Ms ?? 0)
}
const workers = () => (helperThreads(process.pid)?.workers ?? []).map((w) => w.tid)
/** The walls pack's module maker (plain JavaScript), and the runtime's WebAssembly (not in this project's type libraries). */
const { wasmModule } = (await import('../fixtures/walls-pack/tools/wasm-gen.js' as string)) as {
  wasmModule(functions: number, ops: number, salt: number): Buffer
}
const { WebAssembly: wasm } = globalThis as unknown as { WebAssembly: { compile(bytes: Buffer): Promise<unknown> } }

describe("a process's helper threads, read from /proc", () => {
  it('counts CPU handed to libuv’s pool', async () => {
    const before = helpers()
    await Promise.all([0, 1, 2, 3].map((i) => new Promise((resolve) => pbkdf2('x', `salt-${i}`, 400_000, 64, 'sha512', resolve))))
    expect(helpers() - before).toBeGreaterThan(300)
  })
  it('counts CPU handed to V8’s platform threads', async () => {
    const bytes = wasmModule(2000, 3000, 1)
    const before = helpers()
    await Promise.all([0, 1, 2, 3, 4, 5, 6, 7].map(() => wasm.compile(bytes)))
    expect(helpers() - before).toBeGreaterThan(50)
  })
  it('does not count CPU spent on this thread', () => {
    const before = helpers()
    const until = Date.now() + 300
    while (Date.now() < until);
    expect(helpers() - before).toBeLessThan(100)
  })
  it('lists a worker thread among its worker threads while it lives, not among its helpers', async () => {
    const before = workers()
    const worker = new Worker('setInterval(() => {}, 1000)', { eval: true })
    await new Promise((resolve) => worker.once('online', resolve))
    const during = workers()
    await worker.terminate()
    expect(during.filter((tid) => !before.includes(tid))).toHaveLength(1)
  })
  it('reads threads and resident memory in one read, and nothing of a process that is gone', () => {
    expect(threadsAndResident(process.pid)).toMatchObject({ threads: expect.any(Number), residentBytes: expect.any(Number) })
    expect(helperThreads(2 ** 30)).toBeUndefined()
    expect(threadsAndResident(2 ** 30)).toBeUndefined()
  })
})
