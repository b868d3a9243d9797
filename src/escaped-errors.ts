// The front's last resort for an error none of its code caught: a throw in a callback or a
// rejection no one awaited. Such an error is a bug of ours, never pack code's (pack code runs
// in other processes), and must never end the service silently, nor leave it serving with its
// bookkeeping cut in half (a slot never freed, a call never answered).
import type { Log } from './log.js'

/**
 * Logs each escaped error as an `internal-error` line, then drains as on SIGTERM (calls in
 * flight finish, new ones get 503 draining) and exits 1, for the supervisor to start a fresh
 * process. This is what Node does by default (it ends on both), with a line and a drain.
 */
export function onEscapedErrors(log: Log, drainAndStop: () => Promise<void>): void {
  let draining = false
  const onError = (escaped: 'uncaughtException' | 'unhandledRejection') => (thrown: unknown) => {
    const err = thrown instanceof Error ? thrown : new Error(String(thrown))
    log.error('internal-error', { error: err.message, stack: err.stack, escaped, draining: true })
    if (draining) return
    draining = true
    process.exitCode = 1
    void drainAndStop()
  }
  process.on('uncaughtException', onError('uncaughtException'))
  process.on('unhandledRejection', onError('unhandledRejection'))
}
