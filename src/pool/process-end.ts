// When a pack process has ended, for its owner (the spawner for a strict call's process, a warm
// group for its pack process): once it has exited and its channel has closed, so that what it
// wrote on the channel before it ended is read first. Not its 'close', which waits for every
// pipe: its stdout and stderr are passed on at the pace of the service's log (pack-output.ts),
// and a child of pack code's that outlives it may hold them open; either held its end, its calls
// and its core for as long (stop 29's red-team passes).
import type { ChildProcess } from 'node:child_process'

export type ProcessEnd = {
  /** Its channel has closed, or will be read no more. */
  channelClosed(): void
}

/**
 * Calls `ended` once, when `child` has exited and `channelClosed` has been called. With
 * `closePipesAfterMs`, its pipes are closed that long after its exit, whoever holds them, and its
 * channel counts as closed then.
 */
export function whenEnded(child: ChildProcess, ended: (code: number | null, signal: NodeJS.Signals | null) => void, closePipesAfterMs?: number): ProcessEnd {
  let exited: [number | null, NodeJS.Signals | null] | undefined
  let channelOpen = true
  let done = false
  const endOnceBoth = () => {
    if (done || exited === undefined || channelOpen) return
    done = true
    ended(...exited)
  }
  const channelClosed = () => {
    channelOpen = false
    endOnceBoth()
  }
  child.once('exit', (code, signal) => {
    exited = [code, signal]
    endOnceBoth()
    if (closePipesAfterMs === undefined) return
    setTimeout(() => {
      for (const pipe of child.stdio) pipe?.destroy()
      channelClosed()
    }, closePipesAfterMs).unref()
  })
  return { channelClosed }
}
