// Counts invoke requests from their arrival until their answer is written, so a drain waits
// for answers to reach callers, not only for workers to finish.
export type InFlight = { enter(): void; leave(): void; count(): number; idle(): Promise<void> }

export function createInFlight(): InFlight {
  let count = 0
  let waiters: Array<() => void> = []
  return {
    enter: () => {
      count++
    },
    leave: () => {
      count--
      if (count > 0) return
      const done = waiters
      waiters = []
      for (const w of done) w()
    },
    count: () => count,
    idle: () => (count === 0 ? Promise.resolve() : new Promise((resolve) => waiters.push(resolve))),
  }
}
