// A throw or rejection no running call owns (a timer a call left behind after it answered) must
// not end the call its warm worker runs next: it is held, that call finishes, the worker then
// retires. An error of the running call itself still ends the worker, as before, once the
// pack process has read the answer ahead of that call (workers/pooled.ts). A
// strict call's process runs one call and holds nothing: there, calls run unowned.
import { AsyncLocalStorage } from 'node:async_hooks'

/** Made by holdStrayErrors: only a runner that holds stray errors needs to know who owns one. */
let owner: AsyncLocalStorage<number> | undefined
let running: number | undefined
let strayed = false

/** Runs a call's code as owned by `callId`: timers and promises it starts carry the id. */
export function runOwned<T>(callId: number, fn: () => Promise<T>): Promise<T> {
  running = callId
  return (owner === undefined ? fn() : owner.run(callId, fn)).finally(() => {
    running = undefined
  })
}

/** Whether an error nobody owned was held since the worker started: it must not serve again. */
export function strayErrorSeen(): boolean {
  return strayed
}

/** `beforeEnd`: runs as the running call's own error is about to end the worker. */
export function holdStrayErrors(beforeEnd: () => void): void {
  const calls = new AsyncLocalStorage<number>()
  owner = calls
  const onError = (err: unknown) => {
    const from = calls.getStore()
    if (running === undefined || from !== running) {
      strayed = true
      return
    }
    // The running call's own error: end the worker as if no one listened (the call answers
    // handler-throw, "the worker running it exited").
    process.off('uncaughtException', onError)
    process.off('unhandledRejection', onError)
    beforeEnd()
    throw err
  }
  process.on('uncaughtException', onError)
  process.on('unhandledRejection', onError)
}
