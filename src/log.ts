// The service's own log: JSON lines on stderr, one object a line, each with a `kind`
// (CONTRACT §1). Lines are buffered (one write per 8 KiB or 50 ms instead of one per call,
// the front's biggest fixed cost after the worker hop) and flushed synchronously on every
// process exit, so the last lines before an exit are never lost.
import { pino, type Logger } from 'pino'

export type Log = {
  info(kind: string, fields?: Record<string, unknown>): void
  warn(kind: string, fields?: Record<string, unknown>): void
  error(kind: string, fields?: Record<string, unknown>): void
}

const FLUSH_EVERY_MS = 50

export function createLog(destination: number = 2): Log {
  const stream = pino.destination({ fd: destination, sync: false, minLength: 8 * 1024 })
  const logger: Logger = pino({ base: { pid: process.pid }, timestamp: pino.stdTimeFunctions.isoTime }, stream)
  const flush = () => {
    try {
      stream.flushSync()
    } catch {
      // Nothing buffered, or a write already in progress that will carry the lines.
    }
  }
  setInterval(() => stream.flush(), FLUSH_EVERY_MS).unref()
  process.on('exit', flush)
  return {
    info: (kind, fields) => logger.info({ kind, ...fields }),
    warn: (kind, fields) => logger.warn({ kind, ...fields }),
    // Errors come before an exit or are rare: write them, and what came before, at once.
    error: (kind, fields) => {
      logger.error({ kind, ...fields })
      flush()
    },
  }
}
