// The checks every protected route makes, in CONTRACT §2's order after route and method:
// the token (constant time; Authorization is never read), then the tenant pin (§3).
import { createHash, timingSafeEqual } from 'node:crypto'
import type { IncomingHttpHeaders } from 'node:http'

export type Refusal = { status: 401 | 421; body: Record<string, string> }

function digest(value: string): Buffer {
  return createHash('sha256').update(value).digest()
}

export function tokenGuard(token: string): (headers: IncomingHttpHeaders) => Refusal | undefined {
  const expected = digest(token)
  return (headers) => {
    const given = headers['kindgi-pack-token']
    // Comparing fixed-size digests keeps the compare constant-time whatever the length sent.
    if (typeof given === 'string' && timingSafeEqual(digest(given), expected)) return undefined
    return { status: 401, body: { error: 'Bad pack token' } }
  }
}

export function tenantMismatch(why: string): Refusal {
  return { status: 421, body: { code: 'pack-tenant-mismatch', error: why } }
}

/** The kindgi-tenant-id header against the pinned tenant; nothing to check when unpinned. */
export function tenantHeaderGuard(tenantId: string | undefined, headers: IncomingHttpHeaders): Refusal | undefined {
  if (tenantId === undefined) return undefined
  const given = headers['kindgi-tenant-id']
  if (given === undefined) return tenantMismatch(`This pack service is pinned to one tenant: send kindgi-tenant-id`)
  if (given !== tenantId) return tenantMismatch(`This pack service is pinned to another tenant than "${String(given)}"`)
  return undefined
}
