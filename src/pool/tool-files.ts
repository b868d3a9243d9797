// Tool files (protocol 2.10, docs/spec/CONTRACT.md §7) made by the host on a handler's behalf: the
// runtime's file URL and token stay in the front, never in a worker. Each request lives
// only while its call does: the call's answer or deadline aborts it.
import type { FileReply, FileValue } from '../protocol/worker-messages.js'
import { MAX_FILE_BYTES } from '../protocol/channel-limits.js'
import { fromBase64 } from '../protocol/frame-channel.js'
import { artifactIdRefused, fileRequestTooLong } from '../protocol/file-request-bounds.js'

export type FileGrant = { url: string; token: string }

/** Sends a request's reply on to the process that asked; resolves once it has left the front. */
export type SendReply = (message: FileReply) => Promise<void>

/** A file request, attributed by the front to the call `callId` (from the process that sent it, never from the request). */
export type FileHandler = (callId: number, request: RemoteFileRequest, reply: SendReply) => void

export type ToolFiles = {
  /** Lets a call's worker use the grant until `signal` aborts; returns the revoke. */
  grant(callId: number, grant: FileGrant, signal: AbortSignal): () => void
  handle: FileHandler
}

/** The most an answer of the runtime's other than a file's bytes (JSON, a busy text) is read to. */
const MAX_ANSWER_BYTES = 1024 * 1024

/** An answer's text, read to MAX_ANSWER_BYTES at most. */
async function answerText(res: Response, what: string): Promise<string> {
  const tooLarge = () => new Error(`The runtime answered a ${what} with more than ${MAX_ANSWER_BYTES} bytes`)
  return new TextDecoder().decode(await bodyWithin(res, MAX_ANSWER_BYTES, tooLarge))
}

async function isBusy(res: Response, what: string): Promise<boolean> {
  if (res.status !== 503) return false
  return (await answerText(res, what)).includes('tool-files-busy')
}

async function jsonObject(res: Response, what: string): Promise<Record<string, unknown>> {
  const value = JSON.parse(await answerText(res, what)) as unknown
  if (typeof value !== 'object' || value === null || Array.isArray(value)) throw new Error(`The runtime answered a ${what} with ${JSON.stringify(value)}`)
  return value as Record<string, unknown>
}

async function store(grant: FileGrant, request: Extract<RemoteFileRequest, { op: 'store' }>, signal: AbortSignal): Promise<FileValue> {
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
  if (await isBusy(res, 'store')) return { busy: true }
  if (res.status !== 200) throw new Error(`The runtime's file store answered ${res.status} to a store`)
  return jsonObject(res, 'store')
}

/** Takes room for `bytes` of files in the front, or says there is none. */
type TakeRoom = (bytes: number) => boolean

async function read(grant: FileGrant, request: Extract<RemoteFileRequest, { op: 'read' }>, signal: AbortSignal, takeRoom: TakeRoom): Promise<FileValue> {
  const res = await fetch(`${grant.url.replace(/\/+$/, '')}/${encodeURIComponent(request.artifactId)}`, {
    headers: { Authorization: `Bearer ${grant.token}` },
    signal,
  })
  if (await isBusy(res, 'read')) return { busy: true }
  if (res.status !== 200) throw new Error(`The runtime's file store answered ${res.status} to a read`)
  if ((res.headers.get('content-type') ?? '').includes('application/json')) return jsonObject(res, 'read')
  // Room for the length it says, or for the largest file when it says none or says it of bytes
  // that fetch then decodes (content-encoding), before its body is read: past the room for all,
  // it answers busy as the runtime would; nothing was changed. Its body is read to that room.
  const said = Number(res.headers.get('content-length') ?? Number.NaN)
  const encoding = (res.headers.get('content-encoding') ?? 'identity').trim().toLowerCase()
  const room = encoding === 'identity' && Number.isInteger(said) && said >= 0 && said <= MAX_FILE_BYTES ? said : MAX_FILE_BYTES
  if (!takeRoom(room)) {
    await res.body?.cancel()
    return { busy: true }
  }
  const tooLarge = (size: number | string) =>
    room < MAX_FILE_BYTES
      ? new Error(`The runtime's file store sent more than the ${room} bytes it said`)
      : new Error(`The file has ${size} bytes: a pack service reads at most ${MAX_FILE_BYTES} (10 MiB)`)
  return { bytes: await bodyWithin(res, room, tooLarge) }
}

/** A response's bytes, refused as soon as they pass `max` (by its length if it says one): never held past it. */
async function bodyWithin(res: Response, max: number, tooLarge: (size: number | string) => Error): Promise<ArrayBuffer> {
  const said = Number(res.headers.get('content-length') ?? Number.NaN)
  if (said > max) {
    await res.body?.cancel()
    throw tooLarge(said)
  }
  const chunks: Uint8Array[] = []
  let size = 0
  for await (const chunk of res.body ?? []) {
    size += chunk.byteLength
    if (size > max) throw tooLarge(`more than ${max}`)
    chunks.push(chunk)
  }
  const bytes = new Uint8Array(size)
  let at = 0
  for (const chunk of chunks) {
    bytes.set(chunk, at)
    at += chunk.byteLength
  }
  return bytes.buffer
}

/**
 * File requests one call may have in flight: from its arrival until its reply has left the
 * front. Pack code can write requests on its channel without waiting for replies (or reading
 * them), and each holds its bytes here meanwhile: 60 stores of 9 MiB took the front to 2.4 GB
 * from one call, reads of 10 MiB whose replies were never read 1.6–1.9 GB (stop 29). Past a
 * bound a request answers `{ busy: true }`, as the runtime does when it has no room for the
 * bytes: nothing was stored or read, and the handler may try again.
 */
export const MAX_FILE_REQUESTS_PER_CALL = 4
/**
 * Bytes of files in flight for every call together. A store holds its bytes from its arrival; a
 * read holds nothing while it waits for the store's answer, then the length the answer says (or
 * room for the largest file, when it says none or its bytes come compressed) until its reply has
 * left, then its own size.
 */
export const MAX_FILE_BYTES_IN_FLIGHT = 128 * 1024 * 1024

export function createToolFiles(): ToolFiles {
  const grants = new Map<number, { grant: FileGrant; signal: AbortSignal; inFlight: number }>()
  let bytesInFlight = 0
  return {
    grant(callId, grant, signal) {
      grants.set(callId, { grant, signal, inFlight: 0 })
      return () => grants.delete(callId)
    },
    handle(callId, request, reply) {
      const held = grants.get(callId)
      if (held === undefined || held.signal.aborted) {
        void reply({ kind: 'error', message: 'The call has ended: its file token is no longer valid' })
        return
      }
      if (request.op === 'store' && request.bytes.byteLength > MAX_FILE_BYTES) {
        void reply({ kind: 'error', message: `The file has ${request.bytes.byteLength} bytes: a pack service stores at most ${MAX_FILE_BYTES} (10 MiB)` })
        return
      }
      /** What this request holds of the room for all. */
      let bytes = 0
      const takeRoom: TakeRoom = (more) => {
        if (bytesInFlight + more > MAX_FILE_BYTES_IN_FLIGHT) return false
        bytesInFlight += more
        bytes += more
        return true
      }
      if (held.inFlight >= MAX_FILE_REQUESTS_PER_CALL || (request.op === 'store' && !takeRoom(request.bytes.byteLength))) {
        void reply({ kind: 'ok', value: { busy: true } })
        return
      }
      held.inFlight++
      const work = request.op === 'store' ? store(held.grant, request, held.signal) : read(held.grant, request, held.signal, takeRoom)
      work
        .then(
          (value): FileReply => {
            // A read holds what it read (at most the room it took), no longer that room.
            if (request.op === 'read' && 'bytes' in value && value.bytes instanceof ArrayBuffer) {
              bytesInFlight += value.bytes.byteLength - bytes
              bytes = value.bytes.byteLength
            }
            return { kind: 'ok', value }
          },
          (err: Error): FileReply => ({ kind: 'error', message: held.signal.aborted ? 'The call ended before the file request finished' : err.message }),
        )
        .then(reply)
        .finally(() => {
          held.inFlight--
          bytesInFlight -= bytes
        })
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
export function bridgeFileRequest(handle: FileHandler, callId: number, raw: RawFileRequest, reply: SendReply): void {
  const refused = fileRequestTooLong(raw) ?? (typeof raw.artifactId === 'string' ? artifactIdRefused(raw.artifactId) : undefined)
  if (refused !== undefined) {
    void reply({ kind: 'error', message: refused })
    return
  }
  const request = fileRequestOf(raw)
  if (request === undefined) {
    void reply({ kind: 'error', message: 'A malformed file request: ctx.files was not called as the SDK calls it' })
    return
  }
  handle(callId, request, reply)
}
