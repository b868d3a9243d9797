// A pack-code process's channel to the host that started it (a warm group's pack process to the
// front, a strict call's process to its spawner), one JSON message a line: in on stdin, out on
// fd 3. The host's end (src/protocol/frame-channel.ts) reads fd 3 bounded, and ends a process
// that writes anything else there, since pack code can. Not Node's IPC channel: its parser in
// the host holds whatever it is given and throws at what is not JSON. And a process without
// --allow-net may not open a socket on a descriptor (Node >= 25): fd 3 is written with writeSync.
// The host's lines are taken whole: it is the host.
//
// Two ways in. `next` reads stdin blocking, with readSync and nothing else: a strict spare has
// nothing to do until its setup and its call come, and Node's stdin stream (a socket, with the
// net and stream modules it loads) is a large part of a short-lived process's start. `listen`
// reads it as Node's stream from then on, for what comes while code runs (a warm pack process
// from its start; a strict call's abort or file replies). A blocked read in the thread pool
// (fs.read) is no third way: process.exit waits for it, and never returns.
import { readSync, writeSync } from 'node:fs'

const IN = 0
const OUT = 3

export type FdChannel = {
  send(message: unknown): void
  /** A message already serialized, without its newline. */
  sendLine(line: string): void
  /** The next message (undefined: the other end closed), read blocking until `listen` is called. */
  next(): Promise<unknown>
  /** From now on stdin is read as it comes; every message not taken by `next` goes to `onMessage`, those read ahead first. */
  listen(): void
}

/** `onClosed`: the other end closed; nothing more will come. */
export function openFdChannel(onMessage: (message: unknown) => void, onClosed: () => void): FdChannel {
  // One decoder for both ways in: a character split between two reads is whole in neither.
  const decoder = new TextDecoder()
  let partial = ''
  /** Whole lines read and not yet given to anyone. */
  const ahead: string[] = []
  let listening = false
  let closed = false
  let waiting: ((message: unknown) => void) | undefined

  /** Splits what was read into lines: whole ones to `line`, the rest kept for the next read. */
  function absorb(text: string, line: (text: string) => void): void {
    let start = 0
    for (let newline = text.indexOf('\n'); newline !== -1; newline = text.indexOf('\n', start)) {
      const whole = partial + text.slice(start, newline)
      partial = ''
      start = newline + 1
      line(whole)
    }
    partial += text.slice(start)
  }

  function give(line: string): void {
    const message: unknown = JSON.parse(line)
    const taker = waiting
    waiting = undefined
    if (taker !== undefined) taker(message)
    else onMessage(message)
  }

  function close(): void {
    if (closed) return
    closed = true
    onClosed()
    waiting?.(undefined)
  }

  function listen(): void {
    if (listening) return
    listening = true
    for (let line = ahead.shift(); line !== undefined; line = ahead.shift()) give(line)
    process.stdin.on('data', (chunk: Buffer) => absorb(decoder.decode(chunk, { stream: true }), give))
    process.stdin.once('end', close)
    process.stdin.once('close', close)
  }

  function next(): Promise<unknown> {
    const early = ahead.shift()
    if (early !== undefined) return Promise.resolve(JSON.parse(early))
    if (closed) return Promise.resolve(undefined)
    if (listening) return new Promise((resolve) => (waiting = resolve))
    const buffer = Buffer.allocUnsafe(64 * 1024)
    for (;;) {
      let read: number
      try {
        read = readSync(IN, buffer, 0, buffer.length, null)
      } catch (err) {
        // A child's stdin from Node's spawn blocks (libuv makes fds 0-2 so): no EAGAIN here.
        if ((err as NodeJS.ErrnoException).code === 'EINTR') continue
        throw err
      }
      if (read === 0) {
        close()
        return Promise.resolve(undefined)
      }
      absorb(decoder.decode(buffer.subarray(0, read), { stream: true }), (line) => ahead.push(line))
      const line = ahead.shift()
      if (line !== undefined) return Promise.resolve(JSON.parse(line))
    }
  }

  const sendLine = (line: string) => {
    const bytes = Buffer.from(`${line}\n`)
    for (let sent = 0; sent < bytes.length; ) sent += writeSync(OUT, bytes, sent)
  }
  return { send: (message) => sendLine(JSON.stringify(message)), sendLine, next, listen }
}
