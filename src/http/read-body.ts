// Reads a request body from the Node stream while counting it, so an oversized body is
// refused the moment it passes the limit and is never buffered whole (docs/spec/CONTRACT.md §2).
import type { IncomingMessage } from 'node:http'

export const BODY_LIMIT = 10 * 1024 * 1024

export type BodyRead = { kind: 'ok'; text: string } | { kind: 'too-large' } | { kind: 'gone' } | { kind: 'timeout' }

export function readBody(incoming: IncomingMessage, limit: number, timeoutMs: number): Promise<BodyRead> {
  return new Promise((resolve) => {
    const chunks: Buffer[] = []
    let size = 0
    let done = false
    const finish = (result: BodyRead) => {
      if (done) return
      done = true
      clearTimeout(timer)
      incoming.off('data', onData)
      incoming.off('end', onEnd)
      incoming.off('aborted', onGone)
      incoming.off('error', onGone)
      incoming.off('close', onClose)
      if (result.kind !== 'ok') incoming.pause()
      resolve(result)
    }
    const onData = (chunk: Buffer) => {
      size += chunk.length
      if (size > limit) finish({ kind: 'too-large' })
      else chunks.push(chunk)
    }
    const onEnd = () =>
      finish({ kind: 'ok', text: chunks.length === 1 ? (chunks[0] as Buffer).toString('utf8') : Buffer.concat(chunks, size).toString('utf8') })
    const onGone = () => finish({ kind: 'gone' })
    const onClose = () => {
      if (!incoming.complete) finish({ kind: 'gone' })
    }
    const timer = setTimeout(() => finish({ kind: 'timeout' }), timeoutMs)
    incoming.on('data', onData)
    incoming.on('end', onEnd)
    incoming.on('aborted', onGone)
    incoming.on('error', onGone)
    incoming.on('close', onClose)
  })
}
