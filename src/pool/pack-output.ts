// Pack code's own stdout and stderr, passed on to the service's as log records of their own.
// The service's stderr is its log, JSON lines, which the front writes in pieces of whole lines
// (src/pipe-pieces.ts). A process that runs pack code and shared that pipe wrote half a line,
// and the host's next line (a call line) was glued to it and no longer parsed: a tenant could
// hide the audit lines of every other (stop 29). So a pack process writes on pipes of ours, and
// each line that comes is written on as a record of kind `log` (pack-records.ts: it cannot pass
// for a line of the host's), in pieces of whole lines, each at most PIPE_BUF bytes: a write that
// small to a pipe is never interleaved with another process's, so no line of the front's lands
// inside one of these, nor one of these inside the front's. A line longer than a piece is cut
// into lines.
// Passing output on costs the event loop that does it (the front's, for warm pack processes),
// so each pipe is read at most RATE bytes (or 16,384 lines, fewer of many JSON values) a second, and no further while the service's stream
// has HIGH bytes queued: a process that prints more waits in its own writes, and nothing it
// printed is lost. Writes go through libuv's thread pool, never blocking the event loop.
import { write } from 'node:fs'
import type { Readable } from 'node:stream'
import { PIPE_BUF as PIECE, pieceEnd } from '../pipe-pieces.js'
import { packRecords, type PackRecords, type PackSource } from './pack-records.js'
import { createReadRate, type ReadRate } from './read-rate.js'

/** Bytes queued for one of the service's streams past which every pack pipe feeding it waits. */
const HIGH = 1024 * 1024
/** Bytes a second one pack pipe may pass on, after a first burst of as many. */
const RATE = 4 * 1024 * 1024
/**
 * What a line costs of that rate at the least: each is parsed and made a record of its own
 * (pack-records.ts), and lines of `{}` cost the front a core well under the rate in bytes (stop
 * 40's second pass). So a pipe passes on at most 16,384 lines a second.
 */
const MIN_LINE_BYTES = 256
/**
 * What each value of a line parsed as JSON costs of that rate besides: parsing and re-encoding
 * it costs per value: lines of a few thousand keys, within the rate in bytes, cost most of a
 * core of the spawner (a red-team pass, stop 42). A `ctx.log` record holds a dozen or so.
 */
const VALUE_BYTES = 32
const NEWLINE = 0x0a

type Sink = { fd: number; queue: Buffer[]; queued: number; writing: boolean; waiting: Set<Source> }
/** One pack pipe: read again once neither its rate nor its sink holds it. */
type Source = { stream: Readable; heldForRate: boolean; heldForSink: boolean; rate: ReadRate }
const sinks = new Map<number, Sink>()

/** Passes what `stream` (a pack process's stdout or stderr pipe) says on to the service's `fd`, as log records of whole lines (pack-records.ts). */
export function passLines(stream: Readable, fd: number, from: PackSource): void {
  const sink = sinkFor(fd)
  const source: Source = { stream, heldForRate: false, heldForSink: false, rate: createReadRate(RATE) }
  let partial: Buffer = Buffer.alloc(0)
  stream.on('data', (chunk: Buffer) => {
    const data = partial.length === 0 ? chunk : Buffer.concat([partial, chunk])
    const made: PackRecords = { records: [], values: 0 }
    let start = 0
    for (let newline = data.indexOf(NEWLINE); newline !== -1; newline = data.indexOf(NEWLINE, start)) {
      recordsOf(data.subarray(start, newline), from, made)
      start = newline + 1
    }
    partial = data.subarray(start)
    // A line that has not ended by a piece's length is passed on in lines of that length.
    while (partial.length >= PIECE) {
      const cut = charStart(partial, PIECE - 1)
      recordsOf(partial.subarray(0, cut), from, made)
      partial = partial.subarray(cut)
    }
    const { records, values } = made
    if (records.length > 0) queue(sink, Buffer.from(`${records.join('\n')}\n`))
    spend(source, Math.max(chunk.length, records.length * MIN_LINE_BYTES + values * VALUE_BYTES))
    if (sink.queued > HIGH) {
      hold(source)
      source.heldForSink = true
      sink.waiting.add(source)
    }
  })
  stream.on('end', () => {
    if (partial.length > 0) {
      const made: PackRecords = { records: [], values: 0 }
      recordsOf(partial, from, made)
      queue(sink, Buffer.from(`${made.records.join('\n')}\n`))
    }
    partial = Buffer.alloc(0)
  })
  stream.on('close', () => sink.waiting.delete(source))
  // A pipe whose process has gone may fail to read: there is nothing more to pass on.
  stream.on('error', () => undefined)
}

/** Adds the records of one line to `made`, a line longer than a piece cut into lines of that length first. */
function recordsOf(line: Buffer, from: PackSource, made: PackRecords): void {
  let rest = line
  while (rest.length >= PIECE) {
    const cut = charStart(rest, PIECE - 1)
    add(packRecords(rest.subarray(0, cut), from), made)
    rest = rest.subarray(cut)
  }
  add(packRecords(rest, from), made)
}

function add(line: PackRecords, made: PackRecords): void {
  for (const record of line.records) made.records.push(record)
  made.values += line.values
}

/** Takes `bytes` from the source's budget; past it, the source waits until the budget has them again. */
function spend(source: Source, bytes: number): void {
  const waitMs = source.rate.spend(bytes)
  if (waitMs === 0) return
  hold(source)
  source.heldForRate = true
  setTimeout(() => {
    source.heldForRate = false
    resumeIfFree(source)
  }, waitMs)
}

function hold(source: Source): void {
  source.stream.pause()
}

function resumeIfFree(source: Source): void {
  if (!source.heldForRate && !source.heldForSink) source.stream.resume()
}

function sinkFor(fd: number): Sink {
  let sink = sinks.get(fd)
  if (sink === undefined) {
    sink = { fd, queue: [], queued: 0, writing: false, waiting: new Set() }
    sinks.set(fd, sink)
  }
  return sink
}

/** Queues `lines` (whole lines) as pieces of whole lines. Every record fits a piece (pack-records.ts); one that did not would be cut into lines here, never stall the loop. */
function queue(sink: Sink, lines: Buffer): void {
  let start = 0
  while (start < lines.length) {
    let end = pieceEnd(lines, start)
    let piece: Buffer
    if (end > start) piece = lines.subarray(start, end)
    else {
      end = charStart(lines, start + PIECE - 1)
      piece = Buffer.concat([lines.subarray(start, end), Buffer.of(NEWLINE)])
    }
    sink.queue.push(piece)
    sink.queued += piece.length
    start = end
  }
  pump(sink)
}

function pump(sink: Sink): void {
  if (sink.writing) return
  const piece = sink.queue.shift()
  if (piece === undefined) {
    for (const source of sink.waiting) {
      source.heldForSink = false
      resumeIfFree(source)
    }
    sink.waiting.clear()
    return
  }
  sink.writing = true
  write(sink.fd, piece, 0, piece.length, null, (err, written) => {
    sink.writing = false
    if (err !== null && (err as NodeJS.ErrnoException).code === 'EAGAIN') {
      // Another process made the service's stream non-blocking: wait for room.
      sink.queue.unshift(piece)
      setTimeout(() => pump(sink), 5)
      return
    }
    if (err !== null) {
      // Nobody reads the service's stream any more (EPIPE): what pack code prints goes nowhere.
      sink.queued = 0
      sink.queue = []
    } else if (written < piece.length) {
      sink.queued -= written
      sink.queue.unshift(piece.subarray(written))
    } else sink.queued -= written
    pump(sink)
  })
}

/** The last start of a UTF-8 character at or before `at`, so that a cut line stays valid text. */
function charStart(bytes: Buffer, at: number): number {
  let cut = at
  while (cut > at - 3 && ((bytes[cut] as number) & 0xc0) === 0x80) cut--
  return cut
}
