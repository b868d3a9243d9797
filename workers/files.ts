// ctx.files for a handler: store and read go to the front over a private channel, which
// makes the HTTP request with a token the worker never holds. Bytes are copied once into
// a buffer of their own and transferred, never cloned.
import { MessageChannel, parentPort } from 'node:worker_threads'
import type { CallTask } from '../src/protocol/worker-messages.js'
import { MAX_FILE_BYTES } from '../src/protocol/channel-limits.js'

export type Reply = { kind: 'ok'; value: Record<string, unknown> } | { kind: 'error'; message: string }

/** Sends one file request to the host and resolves with its reply; `cancel` drops the wait. */
export type FileChannel = (callId: number, message: Record<string, unknown>, transfer: ArrayBuffer[]) => { reply: Promise<Reply>; cancel(): void }

/** A worker thread's channel: a port of its own per request, handed to the parent. */
const threadChannel: FileChannel = (callId, message, transfer) => {
  const { port1, port2 } = new MessageChannel()
  parentPort!.postMessage({ type: 'kindgi-files', callId, ...message, port: port2 }, [port2, ...transfer])
  return {
    reply: new Promise<Reply>((resolve) =>
      port1.once('message', (reply: Reply) => {
        port1.close()
        resolve(reply)
      }),
    ),
    cancel: () => port1.close(),
  }
}

let channel: FileChannel = threadChannel

/** A strict call's process asks over its own channel to the spawner instead (fd-channel.ts). */
export function setFileChannel(given: FileChannel): void {
  channel = given
}

function ask(callId: number, message: Record<string, unknown>, transfer: ArrayBuffer[], signal: AbortSignal): Promise<Record<string, unknown>> {
  if (signal.aborted) return Promise.reject(new Error('The call was aborted: no more file requests'))
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
      return ask(task.callId, { op: 'store', bytes: buffer, name: options.name, contentType: options.type, nonce: task.nonce }, [buffer], signal)
    }
  }
  if (allowed.read) {
    files.read = (artifactId: unknown) => {
      if (typeof artifactId !== 'string' || artifactId === '') return Promise.reject(new TypeError('files.read needs an artifactId'))
      return ask(task.callId, { op: 'read', artifactId, nonce: task.nonce }, [], signal)
    }
  }
  return files
}
