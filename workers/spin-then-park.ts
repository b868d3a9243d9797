// Piscina parks an idle worker in Atomics.wait until the front posts the next call; waking a
// parked thread costs tens of µs on a VM (measured here: 9–13k calls/s one at a time, 44k/s
// with a spin). So before parking, the worker spins for SPIN_US, watching the counter the
// front bumps with each call. The cost is at most SPIN_US of CPU per call, only when calls
// come slower than that. Only Piscina's own 8-byte request counter is spun on; every other
// Atomics.wait (pack code's) is left exactly as it was.
const SPIN_US = 50
const PISCINA_COUNTER_BYTES = 8

export function installSpinThenPark(): void {
  const wait = Atomics.wait
  const spin = BigInt(SPIN_US * 1000)
  Atomics.wait = function spinThenPark(array: Int32Array | BigInt64Array, index: number, value: never, timeout?: number) {
    if (array.buffer.byteLength === PISCINA_COUNTER_BYTES && index === 0 && timeout === undefined) {
      const until = process.hrtime.bigint() + spin
      while (process.hrtime.bigint() < until) if (Atomics.load(array as Int32Array, index) !== (value as number)) return 'not-equal'
    }
    return wait(array as Int32Array, index, value, timeout)
  } as typeof Atomics.wait
}
