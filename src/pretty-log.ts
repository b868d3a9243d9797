// The log for people (KINDGI_PACK_LOG_FORMAT, log-format.ts): the service runs as this
// process's child and this process prints the child's stderr through pino-pretty, the pino
// ecosystem's way (`node app | pino-pretty`, done for the user). The service and every pack
// process it starts still write the JSON lines they always write, in the order they write
// them, so the lines for people are the same records in the same order, each one line (its
// strings' control characters escaped); a line that is not JSON (a crash's stack) passes
// through as it is. This process runs
// no pack code, holds no port and reads no config: the child does all of that.
import { spawn } from 'node:child_process'
import { constants } from 'node:os'
import type { Readable } from 'node:stream'
import { fileURLToPath } from 'node:url'
import { prettyFactory } from 'pino-pretty'
import { bufferedLines } from './log.js'

const MAIN = fileURLToPath(new URL('./main.js', import.meta.url))
/** After the service exits, how long its last lines may take to arrive: a pack process it started may still hold its stderr. */
const TAIL_MS = 500
/** A "line" with no newline is printed as it is past this size, so pack code cannot grow this process without bound. */
const MAX_LINE = 1024 * 1024

/** pino-pretty shows these as a logger's name, host and caller, not among the fields: a pack's `ctx.log` field of that name is labelled there. */
const labelled = (key: string) => (value: unknown) => `${key}=${JSON.stringify(value)}`

/**
 * One JSON record → one line: time, level and pid, then `[kind] message`, the trace id when
 * the record has one, and every other field as JSON on the same line. Left out only what
 * repeats another field: `event` (= kind), `severity` (= level) and `subsystem` (always "pack").
 */
export function prettyLine(colorize: boolean): (line: string) => string {
  const format = prettyFactory({
    messageKey: 'message',
    colorize,
    translateTime: 'SYS:HH:MM:ss.l',
    ignore: 'subsystem,event,severity,kind,traceId',
    customPrettifiers: { name: labelled('name'), hostname: labelled('hostname'), caller: labelled('caller') },
    messageFormat: '[{kind}] {message}{if traceId} (trace {traceId}){end}',
    singleLine: true,
  })
  return (line) => format(oneLineRecord(line))
}

/**
 * Control characters, shown escaped. pino-pretty prints a record's message as it is, newlines
 * included: a pack's log record whose message held a newline and then a line in this format
 * printed what looked like the host's own `call` and `internal-error` lines, with the front's
 * pid (stop 40's second red-team pass). Escaped, every record is one line for people, and no
 * terminal sequence pack code wrote reaches the terminal.
 */
// biome-ignore lint/suspicious/noControlCharactersInRegex: control characters are what it finds, to escape them
const CONTROL = /[\u0000-\u001f\u007f-\u009f\u2028\u2029]/g
const ESCAPES: Readonly<Record<string, string>> = { '\n': '\\n', '\r': '\\r', '\t': '\\t' }

/** The record with its strings' control characters escaped; the line as it is if it is no JSON object. */
function oneLineRecord(line: string): string | Record<string, unknown> {
  let record: unknown
  try {
    record = JSON.parse(line)
  } catch {
    return line
  }
  if (typeof record !== 'object' || record === null || Array.isArray(record)) return line
  const printable: Record<string, unknown> = {}
  for (const [key, value] of Object.entries(record)) {
    const shown = typeof value === 'string' ? value.replace(CONTROL, (c) => ESCAPES[c] ?? `\\u${c.charCodeAt(0).toString(16).padStart(4, '0')}`) : value
    // defineProperty: a field named __proto__ stays a field.
    Object.defineProperty(printable, key, { value: shown, enumerable: true, writable: true, configurable: true })
  }
  return printable
}

/** Runs the service (the same arguments, JSON log) as a child and prints its log for people; exits as it exits. */
export function serveForPeople(argv: string[], colorize: boolean): void {
  const format = prettyLine(colorize)
  const out = bufferedLines(2)
  const child = spawn(process.execPath, [...process.execArgv, MAIN, ...argv], {
    // The channel only tells the service when this process is gone (main.ts stops then): nothing is sent on it.
    stdio: ['inherit', 'inherit', 'pipe', 'ipc'],
    env: { ...process.env, KINDGI_PACK_LOG_FORMAT: 'json' },
  })
  // Piped, as asked above (the stdio list with 'ipc' types it as maybe absent).
  const stderr = child.stderr as Readable
  // The service reads its token from the environment it was given; this process needs none.
  delete process.env.KINDGI_PACK_SERVICE_TOKEN

  let partial = ''
  const print = (line: string) => {
    let text = `${line}\n`
    try {
      if (line.startsWith('{')) text = format(line)
    } catch {
      // A record pino-pretty cannot print is printed as it came: never lost, never fatal.
    }
    out.write(text)
  }
  stderr.setEncoding('utf8')
  stderr.on('data', (chunk: string) => {
    partial += chunk
    for (let nl = partial.indexOf('\n'); nl !== -1; nl = partial.indexOf('\n')) {
      print(partial.slice(0, nl))
      partial = partial.slice(nl + 1)
    }
    if (partial.length > MAX_LINE) {
      print(partial)
      partial = ''
    }
    out.flush()
  })

  // A terminal's Ctrl-C reaches the service too (one process group); a signal sent to this
  // process alone is passed on. Either way the service drains, logs, and exits first.
  for (const signal of ['SIGINT', 'SIGTERM'] as const) process.on(signal, () => child.kill(signal))

  let ended = false
  const end = (code: number) => {
    if (ended) return
    ended = true
    if (partial !== '') print(partial)
    out.flush()
    process.exit(code)
  }
  child.once('error', (err) => {
    process.stderr.write(`kindgi-pack-host: cannot start the service: ${err.message}\n`)
    end(1)
  })
  child.once('exit', (code, signal) => {
    const status = code ?? 128 + (signal === null ? 0 : constants.signals[signal])
    if (stderr.readableEnded) end(status)
    stderr.once('end', () => end(status))
    setTimeout(() => end(status), TAIL_MS).unref()
  })
}
