// ctx.files for a handler: store and read go to the front over a private channel, which
// makes the HTTP request with a token the worker never holds. Each runner sets its own channel
// (a warm worker a port to its pack process, pooled.ts; a strict call's process its fd channel,
// strict-process.ts). Bytes are copied once into a buffer of their own and transferred, never cloned.
import type { CallTask } from '../src/protocol/worker-messages.js'
import { MAX_FILE_BYTES } from '../src/protocol/channel-limits.js'
import { artifactIdRefused, fileRequestTooLong } from '../src/protocol/file-request-bounds.js'

export type Reply = { kind: 'ok'; value: Record<string, unknown> } | { kind: 'error'; message: string }

/** Sends one file request to the host and resolves with its reply; `cancel` drops the wait. */
export type FileChannel = (callId: number, message: Record<string, unknown>, transfer: ArrayBuffer[]) => { reply: Promise<Reply>; cancel(): void }

let channel: FileChannel | undefined

/** Where this runner's file requests go: set before any pack module loads. */
export function setFileChannel(given: FileChannel): void {
  channel = given
}

function ask(callId: number, message: Record<string, unknown>, transfer: ArrayBuffer[], signal: AbortSignal): Promise<Record<string, unknown>> {
  if (signal.aborted) return Promise.reject(new Error('The call was aborted: no more file requests'))
  if (channel === undefined) throw new Error('bug: this runner set no file channel')
  const request = channel(callId, message, transfer)
  return new Promise((resolve, reject) => {
    const onAbort = () => {
      request.cancel()
      reject(new Error('The call was aborted before the file request finished'))
    }
    signal.addEventListener('abort', onAbort, { once: true })
    void request.reply.then((reply) => {
      signal.removeEventListener('abort', onAbort)
      if (reply.kind === 'error') return reject(new Error(reply.message))
      const value = reply.value
      resolve(value.bytes instanceof ArrayBuffer ? { bytes: new Uint8Array(value.bytes) } : value)
    })
  })
}

function ownBytes(bytes: unknown): ArrayBuffer {
  if (typeof bytes === 'string') return new TextEncoder().encode(bytes).buffer as ArrayBuffer
  if (bytes instanceof ArrayBuffer) return bytes.slice(0)
  if (ArrayBuffer.isView(bytes)) {
    const copy = new Uint8Array(bytes.byteLength)
    copy.set(new Uint8Array(bytes.buffer, bytes.byteOffset, bytes.byteLength))
    return copy.buffer
  }
  throw new TypeError('files.store takes bytes: a Uint8Array, Buffer, ArrayBuffer or string')
}

export function buildFiles(task: CallTask, signal: AbortSignal): object | undefined {
  const allowed = task.files
  if (allowed === undefined) return undefined
  const files: Record<string, unknown> = {}
  if (allowed.store) {
    files.store = (bytes: unknown, options: { name?: unknown; type?: unknown } = {}) => {
      if (typeof options.name !== 'string' || options.name === '') return Promise.reject(new TypeError('files.store needs { name }'))
      if (typeof options.type !== 'string' || options.type === '') return Promise.reject(new TypeError('files.store needs { type }'))
      let buffer: ArrayBuffer
      try {
        buffer = ownBytes(bytes)
      } catch (err) {
        return Promise.reject(err)
      }
      if (buffer.byteLength > MAX_FILE_BYTES) {
        return Promise.reject(
          new RangeError(`files.store takes at most ${MAX_FILE_BYTES} bytes (10 MiB) in a pack service; this file has ${buffer.byteLength}`),
        )
      }
      const tooLong = fileRequestTooLong({ name: options.name, contentType: options.type })
      if (tooLong !== undefined) return Promise.reject(new RangeError(tooLong))
      return ask(task.callId, { op: 'store', bytes: buffer, name: options.name, contentType: options.type, nonce: task.nonce }, [buffer], signal)
    }
  }
  if (allowed.read) {
    files.read = (artifactId: unknown) => {
      if (typeof artifactId !== 'string' || artifactId === '') return Promise.reject(new TypeError('files.read needs an artifactId'))
      const refused = fileRequestTooLong({ artifactId }) ?? artifactIdRefused(artifactId)
      if (refused !== undefined) return Promise.reject(new RangeError(refused))
      return ask(task.callId, { op: 'read', artifactId, nonce: task.nonce }, [], signal)
    }
  }
  return files
}
