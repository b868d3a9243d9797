// memMB caps the V8 heap through resourceLimits, but Buffers and ArrayBuffers live outside
// it. While a limited call runs, this checks the worker's own heap plus its external memory
// (array buffers' backing stores, as V8 counts them for this isolate) and trips when they
// pass the limit. v8.getHeapStatistics() costs ~0.5 µs; process.memoryUsage() ~9 µs (it
// reads the process's RSS too), which every call of a limited tool would pay at its end.
import { getHeapStatistics } from 'node:v8'

const CHECK_EVERY_MS = 25

export function overLimit(memMB: number): boolean {
  const stats = getHeapStatistics()
  return stats.used_heap_size + stats.external_memory > memMB * 1024 * 1024
}

/** Resolves when the limit is passed; `stop` ends the watch. */
export function watchMemory(memMB: number): { tripped: Promise<void>; stop(): void } {
  let timer: NodeJS.Timeout | undefined
  const tripped = new Promise<void>((resolve) => {
    timer = setInterval(() => {
      if (overLimit(memMB)) resolve()
    }, CHECK_EVERY_MS)
    timer.unref()
  })
  return { tripped, stop: () => clearInterval(timer) }
}
