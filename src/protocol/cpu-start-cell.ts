// Where a call with a cpuMs budget marks its start: which thread runs it and how busy that
// thread's event loop had been until then. The front reads it only if the call is still
// running when cpuMs of wall time has passed (busy time never runs ahead of wall time), so a
// call that ends sooner costs no message at all. (A `kindgi-started` message per call did this
// before; a SharedArrayBuffer per call cost the front as much: ~5–9 µs a call at 32 callers.
// So a group shares one table with its workers, given once in workerData, and a call is told
// only its slot.) The worker's own event-loop utilization and the one the front reads through
// its Worker are the same clock: both are "now − loop start − idle time" on the same instants.
// Slot layout, 16 bytes: Float64 busy ms at the start, Int32 thread id + 1 (0: not started),
// Int32 the call's id, so that a slot reused while a terminated worker still held the old
// call's task is never read as the new call's start.

export type CpuStartTable = SharedArrayBuffer

const SLOT_BYTES = 16

export function createCpuStartTable(slots: number): CpuStartTable {
  return new SharedArrayBuffer(SLOT_BYTES * slots)
}

/** Front side, before a slot serves another call. */
export function clearCallStart(table: CpuStartTable, slot: number): void {
  Atomics.store(new Int32Array(table, slot * SLOT_BYTES + 8, 1), 0, 0)
}

/** Worker side, as the call starts. */
export function markCallStarted(table: CpuStartTable, slot: number, callId: number, threadId: number, busyMsSoFar: number): void {
  const ints = new Int32Array(table, slot * SLOT_BYTES + 8, 2)
  new Float64Array(table, slot * SLOT_BYTES, 1)[0] = busyMsSoFar
  Atomics.store(ints, 1, callId | 0)
  Atomics.store(ints, 0, threadId + 1)
}

/** Front side: undefined until the worker has started this call. */
export function readCallStart(table: CpuStartTable, slot: number, callId: number): { threadId: number; busyMsAtStart: number } | undefined {
  const ints = new Int32Array(table, slot * SLOT_BYTES + 8, 2)
  const marked = Atomics.load(ints, 0)
  if (marked === 0 || Atomics.load(ints, 1) !== (callId | 0)) return undefined
  return { threadId: marked - 1, busyMsAtStart: new Float64Array(table, slot * SLOT_BYTES, 1)[0] as number }
}

/** The front's free slots of a table; a call holds one from its start until its worker is done with it. */
export function createCpuSlots(table: CpuStartTable): { take(): number | undefined; give(slot: number): void } {
  const free: number[] = []
  for (let i = table.byteLength / SLOT_BYTES - 1; i >= 0; i--) free.push(i)
  return {
    take() {
      const slot = free.pop()
      if (slot !== undefined) clearCallStart(table, slot)
      return slot
    },
    give: (slot) => void free.push(slot),
  }
}
