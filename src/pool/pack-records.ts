// What a line of pack output becomes in the service's log. The log is JSON lines, one record a
// line, and its readers tell a `call` line, an `internal-error` line or a `draining` line by its
// `kind`: pack code that printed such a line itself had it taken for the front's (a red-team
// pass, stop 40: a `call` line for a tenant that never called, an `internal-error` saying
// `escaped` and `draining`, with the front's own pid under `none`). So every line a pack process
// writes is a record of kind `log` here, whatever it says, with the pid of the process that wrote
// it: a JSON object keeps its other fields (a `ctx.log` record is one), anything else is the
// `message` of a record of the host's making. Each record fits a pipe's atomic write (PIPE_BUF),
// as the line it came from did (pack-output.ts); one that would not is cut into several.
// Only a line shorter than a record may be is parsed: a longer one could never stay one object,
// and parsing and re-encoding it cost the spawner most of a core, or, nested deep, overflowed
// Node 24's JSON.stringify in the process that passes output on, which ended it and every call
// in flight with it (a red-team pass, stop 42).
import { valuesIn } from '../protocol/json-values.js'
import { PIPE_BUF } from '../pipe-pieces.js'

/** Which process wrote a line, and on which of its streams. */
export type PackSource = { pid: number | undefined; stream: 'stdout' | 'stderr' }

/** A line's records (JSON text, no newline), and the values parsing it made (its cost is per value: pack-output.ts). */
export type PackRecords = { records: string[]; values: number }

/** The log records for one line of pack output (without its newline). */
export function packRecords(line: Buffer, from: PackSource): PackRecords {
  const text = line.toString('utf8')
  if (text.length >= PIPE_BUF || !text.startsWith('{')) return { records: textRecords(text, from), values: 0 }
  const values = valuesIn(text, PIPE_BUF)
  const record = objectRecord(text, from)
  return { records: record === undefined ? textRecords(text, from) : [record], values }
}

/** A JSON object's record, keeping its other fields; undefined if the line is not one, or its record would not fit. */
function objectRecord(text: string, from: PackSource): string | undefined {
  try {
    const value = JSON.parse(text) as unknown
    if (typeof value !== 'object' || value === null || Array.isArray(value)) return undefined
    const record = JSON.stringify({ ...value, kind: 'log', event: 'log', pid: from.pid })
    return fits(record) ? record : undefined
  } catch {
    return undefined // not JSON, or nested past what the parser or the encoder takes: text
  }
}

function textRecords(text: string, from: PackSource): string[] {
  const head = { level: 'info', severity: 'INFO', time: new Date().toISOString(), pid: from.pid, subsystem: 'pack' }
  const record = JSON.stringify({ ...head, kind: 'log', event: 'log', stream: from.stream, message: text })
  if (fits(record) || text.length < 2) return [record]
  // Escaped, a character may take six bytes: halves until each fits.
  let half = text.length >> 1
  const code = text.charCodeAt(half)
  if (code >= 0xdc00 && code <= 0xdfff) half-- // not between the halves of a surrogate pair
  return [...textRecords(text.slice(0, half), from), ...textRecords(text.slice(half), from)]
}

/** With its newline, within one atomic write to a pipe. */
function fits(record: string): boolean {
  return Buffer.byteLength(record) < PIPE_BUF
}
