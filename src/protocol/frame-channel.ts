// The channel between the host and a process that runs pack code (a warm group's pack process,
// or a strict call's, through the spawner): one JSON message a line, in on the process's stdin,
// out on its fd 3 (workers/fd-channel.ts writes that end). Pack code can write on fd 3 too, so
// this end reads it bounded (in characters, and in values outside strings) and takes only JSON:
// anything else ends the process (onBroken).
// JSON never holds a raw newline, so a line is a message. Node's IPC channel did the same job
// at about twice the CPU per round trip (bench/ipc-cost.ts), and its parser holds whatever it is
// given and throws in the host at what is not JSON. Bytes (tool files) cross as base64.
import type { Readable, Writable } from 'node:stream'
import { MAX_LINE, MAX_VALUES } from './channel-limits.js'
import { valuesPast } from './json-values.js'
import type { FileReplyMessage } from './pack-messages.js'
import type { FileReply } from './worker-messages.js'

export type FrameChannel<Out> = {
  /** `written`: called once the message has left this process, or never will (the channel closed). Returns the line's length. */
  send(message: Out, written?: () => void): number
  /** The same for a message already encoded (JSON text, no newline). */
  sendText(text: string, written?: () => void): number
  /** False once the other end has gone. */
  open(): boolean
}

/**
 * Messages come on `input` (with the length of the line each was, for whoever holds on to
 * them, and their text, for whoever passes them on), go out on `output`. `onBroken`: the other end sent a line past MAX_LINE or
 * MAX_VALUES, or one that is not JSON, or one `unseal` refuses; nothing after it is read.
 * `unseal`: the message's text from its line (line-seal.ts), or undefined if the line is not the other end's own.
 */
export function openFrames<In, Out>(
  input: Readable,
  output: Writable,
  onMessage: (message: In, lineLength: number, text: string) => void,
  onClosed: () => void,
  onBroken: () => void,
  unseal?: (line: string) => string | undefined,
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
      let text: string | undefined
      try {
        // A line ends within a chunk of its last piece: it may pass the bound by that much.
        text = line.length > MAX_LINE ? undefined : unseal === undefined ? line : unseal(line)
        message = text === undefined || tooManyValues(text) ? undefined : (JSON.parse(text) as In)
      } catch {
        message = undefined // not ours to understand: the other end may be pack code
      }
      if (message === undefined || text === undefined) return broken()
      onMessage(message, line.length, text)
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
  const sendText = (text: string, written?: () => void): number => {
    if (!open) {
      written?.()
      return 0
    }
    const line = `${text}\n`
    output.write(line, written === undefined ? undefined : () => written())
    return line.length
  }
  return {
    send: (message, written) => sendText(JSON.stringify(message), written),
    sendText,
    open: () => open,
  }
}

/** A line of millions of tiny values is no message of ours (json-values.ts); a short one cannot be that. */
function tooManyValues(line: string): boolean {
  return line.length > MAX_VALUES && valuesPast(line, MAX_VALUES)
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
  // A large Buffer has its memory to itself: no copy (a file is up to 10 MiB, and a flood of them held every copy until GC).
  if (buffer.byteOffset === 0 && buffer.byteLength === buffer.buffer.byteLength) return buffer.buffer as ArrayBuffer
  return buffer.buffer.slice(buffer.byteOffset, buffer.byteOffset + buffer.byteLength) as ArrayBuffer
}
