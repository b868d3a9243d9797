// The checks every protected route makes, in docs/spec/CONTRACT.md §2's order after route and method:
// the token (constant time; Authorization is never read), then the tenant pin (§3).
import { timingSafeEqual } from 'node:crypto'
import type { IncomingHttpHeaders } from 'node:http'

export type Refusal = { status: 401 | 421; body: Record<string, string> }

const BAD_TOKEN: Refusal = { status: 401, body: { error: 'Bad pack token' } }

export function tokenGuard(token: string): (headers: IncomingHttpHeaders) => Refusal | undefined {
  const expected = Buffer.from(token, 'latin1')
  return (headers) => {
    const given = headers['kindgi-pack-token']
    if (typeof given !== 'string' || given.length !== expected.length) return BAD_TOKEN
    // Only the length can leak, and the token's length is no secret worth hashing every call for.
    return timingSafeEqual(Buffer.from(given, 'latin1'), expected) ? undefined : BAD_TOKEN
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
