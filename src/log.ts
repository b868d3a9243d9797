// The service's own log: JSON lines on stderr, one object a line, each with a `kind` and, as
// the publisher's service writes them, `event` (= kind), `subsystem` "pack", `level` as a word,
// `severity` as Google Cloud Logging reads it, an ISO `time` and a `message` (docs/spec/CONTRACT.md §1,
// log-messages.ts). Lines are buffered (one write per 8 KiB or 50 ms instead of one per call,
// the front's biggest fixed cost after the worker hop) and written synchronously on every
// process exit, so the last lines before an exit are never lost. A write that fails for good
// (stderr closed: EPIPE) drops the lines instead of retrying forever, so a dead log pipe can
// never keep the service from stopping (sonic-boom's own flushSync retries such errors
// without end: found when a SIGTERM never ended a host whose stderr reader had gone).
import { writeSync } from 'node:fs'
import { pieceEnd } from './pipe-pieces.js'
import { pino, type Logger, type LoggerOptions } from 'pino'
import { callMessage, messageOf } from './log-messages.js'

/** A record's fields; `message` is the log's own sentence (log-messages.ts), never a field's. */
export type LogFields = Record<string, unknown> & { message?: never }

export type Log = {
  info(kind: string, fields?: LogFields): void
  warn(kind: string, fields?: LogFields): void
  error(kind: string, fields?: LogFields): void
}

/** Cloud Logging's LogSeverity for each of pino's level words. */
const SEVERITY: Record<string, string> = { trace: 'DEBUG', debug: 'DEBUG', info: 'INFO', warn: 'WARNING', error: 'ERROR', fatal: 'CRITICAL' }

/** How pino writes every line but the `call` line (exported so a test can hold the fast path to it). */
export function pinoOptions(): LoggerOptions {
  return {
    base: { pid: process.pid, subsystem: 'pack' },
    timestamp: pino.stdTimeFunctions.isoTime,
    messageKey: 'message',
    formatters: { level: (label) => ({ level: label, severity: SEVERITY[label] ?? 'DEFAULT' }) },
  }
}

const FLUSH_EVERY_MS = 50
const FLUSH_AT_BYTES = 8 * 1024
const RETRIES_WHEN_FULL = 200 // × 5 ms: a second for a full pipe to drain

const pause = new Int32Array(new SharedArrayBuffer(4))

/**
 * Writes all of `text` (whole lines) to `fd`, in pieces of whole lines no longer than PIPE_BUF
 * (pipe-pieces.ts: pack output passed on by other processes never lands inside one), waiting out
 * a full pipe (EAGAIN) for a while; false if it cannot.
 */
function writeAll(fd: number, text: string): boolean {
  const all = Buffer.from(text, 'utf8')
  let start = 0
  let retries = 0
  while (start < all.length) {
    // A line longer than a piece goes whole: a log line of ours is never cut.
    let end = pieceEnd(all, start)
    if (end === start) end = all.indexOf(0x0a, start) + 1 || all.length
    try {
      start += writeSync(fd, all, start, end - start)
    } catch (err) {
      const code = (err as NodeJS.ErrnoException).code
      if ((code !== 'EAGAIN' && code !== 'EBUSY') || ++retries > RETRIES_WHEN_FULL) return false
      Atomics.wait(pause, 0, 0, 5)
    }
  }
  return true
}

export function bufferedLines(fd: number): { write(line: string): void; flush(): void } {
  let buffered = ''
  const flush = () => {
    if (buffered === '') return
    const text = buffered
    buffered = ''
    writeAll(fd, text)
  }
  return {
    write(line) {
      buffered += line
      if (buffered.length >= FLUSH_AT_BYTES) flush()
    },
    flush,
  }
}

export function createLog(destination: number = 2): Log {
  const stream = bufferedLines(destination)
  const logger: Logger = pino(pinoOptions(), stream)
  setInterval(stream.flush, FLUSH_EVERY_MS).unref()
  process.on('exit', stream.flush)
  // The `call` line is written without pino, the same JSON pino would write: it is one line
  // per call, its fields are plain strings and numbers, and pino's generic serializer cost
  // the front a share of its CPU (bench/PROFILE.md, design figures). Only the time, the fields and the message vary.
  const callPrefix = `{"level":"info","severity":"INFO","time":"`
  const callMiddle = `","pid":${process.pid},"subsystem":"pack","kind":"call","event":"call"`
  // Many call lines share a millisecond under load: format its time once.
  let isoMs = 0
  let iso = ''
  const isoNow = () => {
    const now = Date.now()
    if (now !== isoMs) {
      isoMs = now
      iso = new Date(now).toISOString()
    }
    return iso
  }
  // Only the per-call lines wait in the buffer; a lifecycle line (listening, draining, …) goes out at once.
  return {
    info: (kind, fields) => {
      if (kind === 'call') {
        const rest = fields === undefined ? '{}' : JSON.stringify(fields)
        const message = JSON.stringify(callMessage(fields))
        stream.write(`${callPrefix}${isoNow()}${callMiddle}${rest.length > 2 ? `,${rest.slice(1, -1)}` : ''},"message":${message}}\n`)
        return
      }
      logger.info({ kind, event: kind, ...fields }, messageOf(kind, fields))
      stream.flush()
    },
    warn: (kind, fields) => {
      logger.warn({ kind, event: kind, ...fields }, messageOf(kind, fields))
      stream.flush()
    },
    // Errors come before an exit or are rare: write them, and what came before, at once.
    error: (kind, fields) => {
      logger.error({ kind, event: kind, ...fields }, messageOf(kind, fields))
      stream.flush()
    },
  }
}
