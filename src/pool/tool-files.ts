// Tool files (protocol 2.10, docs/spec/CONTRACT.md §7) made by the host on a handler's behalf: the
// runtime's file URL and token stay in the front, never in a worker. Each request lives
// only while its call does: the call's answer or deadline aborts it.
import { MessageChannel } from 'node:worker_threads'
import type { FileReply, FileRequest, FileValue } from '../protocol/worker-messages.js'
import { MAX_FILE_BYTES } from '../protocol/channel-limits.js'
import { fromBase64 } from '../protocol/frame-channel.js'

export type FileGrant = { url: string; token: string }

export type ToolFiles = {
  /** Lets a call's worker use the grant until `signal` aborts; returns the revoke. */
  grant(callId: number, grant: FileGrant, signal: AbortSignal): () => void
  handle(request: FileRequest): void
}

async function isBusy(res: Response): Promise<boolean> {
  if (res.status !== 503) return false
  return (await res.text()).includes('tool-files-busy')
}

async function jsonObject(res: Response, what: string): Promise<Record<string, unknown>> {
  const value = (await res.json()) as unknown
  if (typeof value !== 'object' || value === null || Array.isArray(value)) throw new Error(`The runtime answered a ${what} with ${JSON.stringify(value)}`)
  return value as Record<string, unknown>
}

async function store(grant: FileGrant, request: Extract<FileRequest, { op: 'store' }>, signal: AbortSignal): Promise<FileValue> {
  const res = await fetch(grant.url, {
    method: 'POST',
    body: new Uint8Array(request.bytes),
    headers: {
      'Content-Type': request.contentType,
      'Kindgi-File-Name': encodeURIComponent(request.name),
      Authorization: `Bearer ${grant.token}`,
    },
    signal,
  })
  if (await isBusy(res)) return { busy: true }
  if (res.status !== 200) throw new Error(`The runtime's file store answered ${res.status} to a store`)
  return jsonObject(res, 'store')
}

async function read(grant: FileGrant, request: Extract<FileRequest, { op: 'read' }>, signal: AbortSignal): Promise<FileValue> {
  const res = await fetch(`${grant.url.replace(/\/+$/, '')}/${encodeURIComponent(request.artifactId)}`, {
    headers: { Authorization: `Bearer ${grant.token}` },
    signal,
  })
  if (await isBusy(res)) return { busy: true }
  if (res.status !== 200) throw new Error(`The runtime's file store answered ${res.status} to a read`)
  if ((res.headers.get('content-type') ?? '').includes('application/json')) return jsonObject(res, 'read')
  const bytes = await res.arrayBuffer()
  if (bytes.byteLength > MAX_FILE_BYTES) throw new Error(`The file has ${bytes.byteLength} bytes: a pack service reads at most ${MAX_FILE_BYTES} (10 MiB)`)
  return { bytes }
}

/**
 * File requests one call may have in flight. Pack code can write requests on its channel
 * without waiting for replies, and each holds its bytes here until the store answers: 60 of
 * 11 MiB took the front to 1.3–2.4 GB from one call (stop 29). Past a bound the request is
 * answered `{ busy: true }`, as the runtime answers when it has no room for the bytes: nothing
 * was stored or read, and the handler may try again.
 */
export const MAX_FILE_REQUESTS_PER_CALL = 4
/** Bytes of stores in flight for every call together. */
export const MAX_STORE_BYTES_IN_FLIGHT = 64 * 1024 * 1024

export function createToolFiles(): ToolFiles {
  const grants = new Map<number, { grant: FileGrant; signal: AbortSignal; inFlight: number }>()
  let storeBytesInFlight = 0
  return {
    grant(callId, grant, signal) {
      grants.set(callId, { grant, signal, inFlight: 0 })
      return () => grants.delete(callId)
    },
    handle(request) {
      const reply = (message: FileReply, transfer: ArrayBuffer[] = []) => {
        request.port.postMessage(message, transfer)
        request.port.close()
      }
      const held = grants.get(request.callId)
      if (held === undefined || held.signal.aborted) {
        reply({ kind: 'error', message: 'The call has ended: its file token is no longer valid' })
        return
      }
      const bytes = request.op === 'store' ? request.bytes.byteLength : 0
      if (bytes > MAX_FILE_BYTES) {
        reply({ kind: 'error', message: `The file has ${bytes} bytes: a pack service stores at most ${MAX_FILE_BYTES} (10 MiB)` })
        return
      }
      if (held.inFlight >= MAX_FILE_REQUESTS_PER_CALL || (bytes > 0 && storeBytesInFlight + bytes > MAX_STORE_BYTES_IN_FLIGHT)) {
        reply({ kind: 'ok', value: { busy: true } })
        return
      }
      held.inFlight++
      storeBytesInFlight += bytes
      const done = () => {
        held.inFlight--
        storeBytesInFlight -= bytes
      }
      const work = request.op === 'store' ? store(held.grant, request, held.signal) : read(held.grant, request, held.signal)
      work.finally(done).then(
        (value) => reply({ kind: 'ok', value }, 'bytes' in value && value.bytes instanceof ArrayBuffer ? [value.bytes] : []),
        (err: Error) => reply({ kind: 'error', message: held.signal.aborted ? 'The call ended before the file request finished' : err.message }),
      )
    },
  }
}

/** A file request as it arrives from a pack process, before the front attributes it to a call. */
export type RemoteFileRequest = { op: 'store'; bytes: ArrayBuffer; name: string; contentType: string } | { op: 'read'; artifactId: string }

/** A file request as it crosses a pack process's channel: a stored file's bytes as base64. */
export type RawFileRequest = { op?: unknown; bytes64?: unknown; name?: unknown; contentType?: unknown; artifactId?: unknown }

/** A pack process's file request, checked: pack code can write on its channel, so any field may be anything. */
function fileRequestOf(raw: RawFileRequest): RemoteFileRequest | undefined {
  if (raw.op === 'store' && typeof raw.bytes64 === 'string' && typeof raw.name === 'string' && typeof raw.contentType === 'string') {
    return { op: 'store', bytes: fromBase64(raw.bytes64), name: raw.name, contentType: raw.contentType }
  }
  if (raw.op === 'read' && typeof raw.artifactId === 'string') return { op: 'read', artifactId: raw.artifactId }
  return undefined
}

/**
 * Hands a pack process's file request to `handle` as the call `callId`'s (which the caller
 * decided from the process, never from the request), and its reply to `reply`.
 */
export function bridgeFileRequest(handle: (request: FileRequest) => void, callId: number, raw: RawFileRequest, reply: (message: FileReply) => void): void {
  const request = fileRequestOf(raw)
  if (request === undefined) {
    reply({ kind: 'error', message: 'A malformed file request: ctx.files was not called as the SDK calls it' })
    return
  }
  const { port1, port2 } = new MessageChannel()
  port1.once('message', (message: FileReply) => {
    port1.close()
    reply(message)
  })
  const common = { type: 'kindgi-files' as const, callId, port: port2 }
  handle(
    request.op === 'store'
      ? { ...common, op: 'store', bytes: request.bytes, name: request.name, contentType: request.contentType }
      : { ...common, op: 'read', artifactId: request.artifactId },
  )
}
