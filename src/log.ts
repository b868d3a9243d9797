// The service's own log: JSON lines on stderr, one object a line, each with a `kind`
// (CONTRACT §1). Synchronous, so the last lines before an exit are never lost.
import { pino, type Logger } from 'pino'

export type Log = {
  info(kind: string, fields?: Record<string, unknown>): void
  warn(kind: string, fields?: Record<string, unknown>): void
  error(kind: string, fields?: Record<string, unknown>): void
}

export function createLog(destination: number = 2): Log {
  const logger: Logger = pino({ base: { pid: process.pid }, timestamp: pino.stdTimeFunctions.isoTime }, pino.destination({ fd: destination, sync: true }))
  return {
    info: (kind, fields) => logger.info({ kind, ...fields }),
    warn: (kind, fields) => logger.warn({ kind, ...fields }),
    error: (kind, fields) => logger.error({ kind, ...fields }),
  }
}
