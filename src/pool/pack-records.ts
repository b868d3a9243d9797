// What a line of pack output becomes in the service's log. The log is JSON lines, one record a
// line, and its readers tell a `call` line, an `internal-error` line or a `draining` line by its
// `kind`: pack code that printed such a line itself had it taken for the front's (a red-team
// pass, stop 40: a `call` line for a tenant that never called, an `internal-error` saying
// `escaped` and `draining`, with the front's own pid under `none`). So every line a pack process
// writes is a record of kind `log` here, whatever it says, with the pid of the process that wrote
// it: a JSON object keeps its other fields (a `ctx.log` record is one), anything else is the
// `message` of a record of the host's making. Each record fits a pipe's atomic write (PIPE_BUF),
// as the line it came from did (pack-output.ts); one that would not is cut into several.
import { PIPE_BUF } from '../pipe-pieces.js'

/** Which process wrote a line, and on which of its streams. */
export type PackSource = { pid: number | undefined; stream: 'stdout' | 'stderr' }

/** The log records (JSON text, no newline) for one line of pack output (without its newline). */
export function packRecords(line: Buffer, from: PackSource): string[] {
  const text = line.toString('utf8')
  const object = text.startsWith('{') ? jsonObject(text) : undefined
  if (object !== undefined) {
    const record = JSON.stringify({ ...object, kind: 'log', event: 'log', pid: from.pid })
    if (fits(record)) return [record]
  }
  return textRecords(text, from)
}

function jsonObject(text: string): Record<string, unknown> | undefined {
  try {
    const value = JSON.parse(text) as unknown
    return typeof value === 'object' && value !== null && !Array.isArray(value) ? (value as Record<string, unknown>) : undefined
  } catch {
    return undefined // not JSON, or nested past what the parser takes: text
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
