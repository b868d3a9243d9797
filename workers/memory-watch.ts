// memMB caps the V8 heap through resourceLimits, but Buffers and ArrayBuffers live outside
// it. While a limited call runs, this checks the worker's own heap plus array buffers
// (process.memoryUsage() is per worker for those) and trips when they pass the limit.
const CHECK_EVERY_MS = 25

export function overLimit(memMB: number): boolean {
  const usage = process.memoryUsage()
  return usage.heapUsed + usage.arrayBuffers > memMB * 1024 * 1024
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
