// The channel between the front and a warm group's pack process: one JSON message a line on a
// pipe of our own (fd 3 of the pack process). Node's IPC channel did the same job at about
// twice the CPU per round trip (bench/ipc-cost.ts); JSON never holds a raw newline, so a line
// is a message. Bytes (tool files) cross as base64 (toBase64/fromBase64 at their two sites).
// Where the permission model gates the network (Node >= 25) a process without --allow-net may
// not open a socket on a descriptor, so a `network: none` group's process is given Node's
// own IPC channel instead, carrying the same messages (viaIpc).
import type { Duplex, Readable, Writable } from 'node:stream'
import type { FileReplyMessage } from './pack-messages.js'
import type { FileReply } from './worker-messages.js'

export type FrameChannel<Out> = {
  send(message: Out): void
  /** False once the other end has gone. */
  open(): boolean
}

/** The longest line taken: a file of MAX_FILE_BYTES as base64, and room around it. */
const MAX_LINE = 16 * 1024 * 1024

/**
 * The largest tool file that crosses a pack process's channel, stored or read: base64 makes it
 * a third larger. Past it, ctx.files.store throws, and a read answers an error, saying so.
 */
export const MAX_FILE_BYTES = 10 * 1024 * 1024

/** `onBroken`: the other end sent a line past MAX_LINE or one that is not JSON (default: ignore it). */
export function openFrames<In, Out>(pipe: Duplex, onMessage: (message: In) => void, onClosed: () => void, onBroken?: () => void): FrameChannel<Out> {
  return openFramesOn<In, Out>(pipe, pipe, onMessage, onClosed, onBroken)
}

/** The same over two pipes: messages come on `input`, go out on `output`. */
export function openFramesOn<In, Out>(
  input: Readable,
  output: Writable,
  onMessage: (message: In) => void,
  onClosed: () => void,
  onBroken?: () => void,
): FrameChannel<Out> {
  let open = true
  let partial = ''
  input.setEncoding('utf8')
  input.on('data', (chunk: string) => {
    if (!open) return
    let start = 0
    let newline = chunk.indexOf('\n')
    if (newline === -1) {
      partial += chunk
      if (partial.length > MAX_LINE) broken()
      return
    }
    let line = partial + chunk.slice(0, newline)
    partial = ''
    for (;;) {
      let message: In | undefined
      try {
        // A line ends within a chunk of its last piece: it may pass the bound by that much.
        message = line.length > MAX_LINE ? undefined : (JSON.parse(line) as In)
      } catch {
        message = undefined // not ours to understand: the other end may be pack code
      }
      if (message === undefined) {
        if (onBroken !== undefined) return broken()
      } else {
        onMessage(message)
      }
      if (!open) return
      start = newline + 1
      newline = chunk.indexOf('\n', start)
      if (newline === -1) break
      line = chunk.slice(start, newline)
    }
    partial = chunk.slice(start)
    if (partial.length > MAX_LINE) broken()
  })
  function broken(): void {
    partial = ''
    if (onBroken === undefined) return
    open = false
    onBroken()
  }
  const closed = () => {
    if (!open) return
    open = false
    onClosed()
  }
  input.on('close', closed)
  input.on('end', closed)
  input.on('error', closed)
  output.on('error', closed)
  return {
    send(message) {
      if (open) output.write(`${JSON.stringify(message)}\n`)
    },
    open: () => open,
  }
}

/** Over Node's IPC channel (JSON serialization): `send` and `on` are the process's or the child's. */
export function viaIpc<In, Out>(
  end: {
    send?: (message: never) => unknown
    connected?: boolean
    on(event: 'message', listener: (message: In) => void): unknown
    once(event: 'disconnect', listener: () => void): unknown
  },
  onMessage: (message: In) => void,
  onClosed: () => void,
): FrameChannel<Out> {
  let open = true
  end.on('message', onMessage)
  end.once('disconnect', () => {
    open = false
    onClosed()
  })
  return {
    send(message) {
      if (open && end.connected !== false) end.send?.(message as never)
    },
    open: () => open,
  }
}

/** A file reply as it crosses a channel: read bytes as base64. */
export function fileReplyAcross(reply: FileReply): FileReplyMessage {
  if (reply.kind !== 'ok' || !('bytes' in reply.value) || !(reply.value.bytes instanceof ArrayBuffer)) return reply as FileReplyMessage
  return { kind: 'ok', value: { bytes64: toBase64(reply.value.bytes) } }
}

export function toBase64(bytes: ArrayBuffer): string {
  return Buffer.from(bytes).toString('base64')
}

export function fromBase64(text: string): ArrayBuffer {
  const buffer = Buffer.from(text, 'base64')
  return buffer.buffer.slice(buffer.byteOffset, buffer.byteOffset + buffer.byteLength) as ArrayBuffer
}
