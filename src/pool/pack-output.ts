// Pack code's own stdout and stderr, passed on to the service's as whole lines of their own.
// The service's stderr is its log, JSON lines, written by the front a line a write. A process
// that runs pack code and shared that pipe wrote half a line, and the host's next line (a call
// line) was glued to it and no longer parsed: a tenant could hide the audit lines of every
// other (stop 29). So a pack process writes on pipes of ours, and what comes is written on in
// pieces of whole lines, each at most PIPE_BUF bytes: a write that small to a pipe is never
// interleaved with another process's, so no line of the front's lands inside one of these.
// A line longer than a piece is cut into lines. Writes go through libuv's thread pool, so a slow
// reader of the service's log holds up only the processes that print (their pipes are not read
// past HIGH), never the event loop that passes them on.
import { write } from 'node:fs'
import type { Readable } from 'node:stream'

/** PIPE_BUF on Linux: the largest write to a pipe that the kernel never interleaves. */
const PIECE = 4096
/** Bytes queued for one of the service's streams past which every pack pipe feeding it waits. */
const HIGH = 1024 * 1024
const NEWLINE = 0x0a

type Sink = { fd: number; queue: Buffer[]; queued: number; writing: boolean; waiting: Set<Readable> }
const sinks = new Map<number, Sink>()

/** Passes what `source` (a pack process's stdout or stderr pipe) says on to the service's `fd`, as whole lines. */
export function passLines(source: Readable, fd: number): void {
  const sink = sinkFor(fd)
  let partial: Buffer = Buffer.alloc(0)
  source.on('data', (chunk: Buffer) => {
    const data = partial.length === 0 ? chunk : Buffer.concat([partial, chunk])
    const lastNewline = data.lastIndexOf(NEWLINE)
    const whole = lastNewline === -1 ? data.subarray(0, 0) : data.subarray(0, lastNewline + 1)
    partial = data.subarray(lastNewline + 1)
    // A line that has not ended by a piece's length is written as lines of that length.
    const cut = partial.length < PIECE ? 0 : charStart(partial, partial.length - (partial.length % (PIECE - 1)))
    queue(sink, cut === 0 ? whole : Buffer.concat([whole, partial.subarray(0, cut), Buffer.of(NEWLINE)]))
    partial = partial.subarray(cut)
    if (sink.queued > HIGH) {
      source.pause()
      sink.waiting.add(source)
    }
  })
  source.on('end', () => {
    if (partial.length > 0) queue(sink, Buffer.concat([partial, Buffer.of(NEWLINE)]))
    partial = Buffer.alloc(0)
  })
  source.on('close', () => sink.waiting.delete(source))
  // A pipe whose process has gone may fail to read: there is nothing more to pass on.
  source.on('error', () => undefined)
}

function sinkFor(fd: number): Sink {
  let sink = sinks.get(fd)
  if (sink === undefined) {
    sink = { fd, queue: [], queued: 0, writing: false, waiting: new Set() }
    sinks.set(fd, sink)
  }
  return sink
}

/** Queues `lines` (whole lines) as pieces of whole lines; a line longer than a piece is cut into lines. */
function queue(sink: Sink, lines: Buffer): void {
  let start = 0
  while (start < lines.length) {
    let end: number
    let piece: Buffer
    if (lines.length - start <= PIECE) end = lines.length
    else end = lines.lastIndexOf(NEWLINE, start + PIECE - 1) + 1
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
    for (const source of sink.waiting) source.resume()
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
