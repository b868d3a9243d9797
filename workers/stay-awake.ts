// Keeps this thread's event loop turning, without sleeping, for a short while: its next message
// is then read as it comes, instead of waking a sleeping thread for it. At one caller that
// wake costs more than the call itself (bench/PROFILE.md, tenth pass). The pack process's main
// thread stays awake through a lone call (for its answer) and a little after it (for the next
// call); under load no call is lone and nothing stays awake, since a thread kept turning takes
// a core from the ones doing the work.

/** How long the pack process's main thread stays awake for a lone call's answer. */
export const AWAKE_FOR_ANSWER_MS = 0.5
/** How long it stays awake after a lone call's answer, for the next call: a client's turnaround, about. */
export const AWAKE_FOR_NEXT_MS = 0.3

/** Turns the event loop, one immediate at a time, until `done()`; then calls `stopped`. */
export function stayAwake(done: () => boolean, stopped: () => void): void {
  const turn = (): void => {
    if (done()) {
      stopped()
      return
    }
    setImmediate(turn)
  }
  setImmediate(turn)
}
