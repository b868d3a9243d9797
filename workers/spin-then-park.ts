// Piscina parks an idle worker in Atomics.wait until the front posts the next call; waking a
// parked thread costs tens of µs on a VM (measured here: 9–13k calls/s one at a time, 44k/s
// with a spin). So before parking, the worker spins, watching the counter the front bumps
// with each call. How long depends on the load the front saw when it sent the last call:
// - alone on the worker threads (the front waited for the answer in shared memory), the next
//   call comes one client round trip later, so the worker spins LONG_SPIN_US: at most that
//   much CPU per call, spent only while calls come one at a time;
// - otherwise the front is the busy one and a spinning worker takes a core from it: with a
//   50 µs spin at 32 callers, the two workers burnt 90 µs of CPU a call against 45 µs without
//   (per-thread CPU from /proc, echo), and served 7.3k calls/s against 8.8k. So it parks at once.
// Only Piscina's own 8-byte request counter is spun on; every other Atomics.wait (pack
// code's) is left exactly as it was.
const SHORT_SPIN_US = 0
const LONG_SPIN_US = 600
const PISCINA_COUNTER_BYTES = 8

let spinNs = BigInt(SHORT_SPIN_US * 1000)

/** Called with each call: was the front waiting on this call alone? */
export function spinLongAfterThisCall(alone: boolean): void {
  spinNs = BigInt((alone ? LONG_SPIN_US : SHORT_SPIN_US) * 1000)
}

export function installSpinThenPark(): void {
  const wait = Atomics.wait
  Atomics.wait = function spinThenPark(array: Int32Array | BigInt64Array, index: number, value: never, timeout?: number) {
    if (spinNs > 0n && array.buffer.byteLength === PISCINA_COUNTER_BYTES && index === 0 && timeout === undefined) {
      const until = process.hrtime.bigint() + spinNs
      while (process.hrtime.bigint() < until) if (Atomics.load(array as Int32Array, index) !== (value as number)) return 'not-equal'
    }
    return wait(array as Int32Array, index, value, timeout)
  } as typeof Atomics.wait
}
