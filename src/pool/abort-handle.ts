// The smallest thing Piscina accepts as a task's abort signal (an emitter with `once`),
// created for every call: an AbortController and its EventTarget cost several times more on
// the front's hot path, and nothing here needs more than one listener.
export type AbortHandle = {
  aborted: boolean
  reason: unknown
  once(event: 'abort', listener: () => void): void
  /** Piscina's types name `off`; its code calls `removeListener`. */
  off(event: 'abort', listener: () => void): void
  removeListener(event: 'abort', listener: () => void): void
  abort(): void
}

export function createAbortHandle(): AbortHandle {
  let listener: (() => void) | undefined
  return {
    aborted: false,
    reason: undefined,
    once(_event, fn) {
      listener = fn
    },
    off(_event, fn) {
      if (listener === fn) listener = undefined
    },
    removeListener(_event, fn) {
      if (listener === fn) listener = undefined
    },
    abort() {
      if (this.aborted) return
      this.aborted = true
      this.reason = 'terminated by the pack host'
      const fn = listener
      listener = undefined
      fn?.()
    },
  }
}
