// A call's idempotencyKey as pack protocol 2.6 defines it: a version 5 UUID (RFC 9562, SHA-1)
// under namespace a70d5bff-e713-4322-b2ea-9d5c4926a861 over the UTF-8 bytes of the compact
// JSON array [runId, stepScope, toolId] (plus the model's call id when there is one), with
// characters beyond ASCII written as themselves — exactly what JSON.stringify produces.
import { createHash } from 'node:crypto'

export const IDEMPOTENCY_NAMESPACE = 'a70d5bff-e713-4322-b2ea-9d5c4926a861'

export function uuidV5(name: string, namespace: string): string {
  const ns = Buffer.from(namespace.replace(/-/g, ''), 'hex')
  if (ns.length !== 16) throw new TypeError(`Not a UUID: ${namespace}`)
  const hash = createHash('sha1').update(ns).update(name, 'utf8').digest()
  const bytes = hash.subarray(0, 16)
  bytes[6] = ((bytes[6] as number) & 0x0f) | 0x50
  bytes[8] = ((bytes[8] as number) & 0x3f) | 0x80
  const hex = bytes.toString('hex')
  return `${hex.slice(0, 8)}-${hex.slice(8, 12)}-${hex.slice(12, 16)}-${hex.slice(16, 20)}-${hex.slice(20)}`
}

export type IdempotencyParts = { runId: string; stepScope: string; toolId: string; modelCallId?: string }

export function idempotencyKey(parts: IdempotencyParts): string {
  const list = [parts.runId, parts.stepScope, parts.toolId]
  if (parts.modelCallId !== undefined) list.push(parts.modelCallId)
  return uuidV5(JSON.stringify(list), IDEMPOTENCY_NAMESPACE)
}
