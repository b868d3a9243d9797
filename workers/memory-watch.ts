// memMB caps the V8 heap through resourceLimits, but Buffers and ArrayBuffers live outside
// it. While a limited call runs, this checks the worker's own heap plus its external memory
// (array buffers' backing stores, as V8 counts them for this isolate) and trips when they
// pass the limit. v8.getHeapStatistics() is read, not process.memoryUsage(), which also reads
// the process's RSS and costs far more, at the end of every call of a limited tool
// (bench/PROFILE.md, design figures).

const CHECK_EVERY_MS = 25

// One interval per worker, started with its first limited call and kept, rather than a timer
// set and cleared and a promise raced for every call: the watch is most of what a limited
// call does more than an unlimited one. The interval costs nothing between calls: an idle
// pooled worker is parked in Atomics.wait and its timers do not run. A worker runs one call
// at a time, so there is one watched call at most.
let watched: { memMB: number; trip: () => void } | undefined
let timer: NodeJS.Timeout | undefined
type HeapReading = () => { used_heap_size: number; external_memory: number }
let heapStatistics: HeapReading | undefined

function check(): void {
  if (watched !== undefined && overLimit(watched.memMB)) watched.trip()
}

/** node:v8's reading, taken once: only a runner with a memMB tool loads node:v8 at all. */
function readHeap(): HeapReading {
  heapStatistics ??= (process.getBuiltinModule('node:v8') as typeof import('node:v8')).getHeapStatistics
  return heapStatistics
}

/** Takes the reading before any pack module loads: pack code could replace it later, and hide its Buffers from the watch. */
export function prepareMemoryWatch(): void {
  readHeap()
}

export function overLimit(memMB: number): boolean {
  const stats = readHeap()()
  return stats.used_heap_size + stats.external_memory > memMB * 1024 * 1024
}

/** Calls `trip` if the limit is passed while the call runs; returns the function that ends the watch. */
export function watchMemory(memMB: number, trip: () => void): () => void {
  if (timer === undefined) {
    timer = setInterval(check, CHECK_EVERY_MS)
    timer.unref()
  }
  const call = { memMB, trip }
  watched = call
  return () => {
    if (watched === call) watched = undefined
  }
}
