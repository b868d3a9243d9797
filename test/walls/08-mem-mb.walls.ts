// Finding 8: pack code bypassed memMB: a large SharedArrayBuffer (which the memory watch does
// not count) held and answered ok; and synchronous allocation past memMB, given back before
// the watch looks. Capped at 512 MiB against memMB 64.
import { describe, expect, it } from 'vitest'
import { rawInvoke, STRICT, stillServes, wallsHost } from './walls-helpers.js'

describe('finding 8: memMB bounds all the memory a call holds', () => {
  const host = wallsHost({ env: STRICT })

  it('under strict, a memMB 64 tool holding a 512 MiB SharedArrayBuffer answers handler-throw naming memMB', async () => {
    const res = await rawInvoke(host.port, 'sab-hold', { mb: 512, ms: 300 }, { tenantId: 'tenant-a', runId: 'attack' })
    expect.soft('error' in res ? res : res.body, "the attack's answer").toMatchObject({ v: 2, kind: 'error', code: 'handler-throw', toolId: 'sab-hold' })
    if (!('error' in res)) expect.soft(String(res.body?.message), 'the message').toContain('memMB 64')
    await stillServes(host)
  })

  it('under strict, a memMB 64 tool allocating 512 MiB synchronously (then giving it back) answers handler-throw naming memMB', async () => {
    const res = await rawInvoke(host.port, 'sync-alloc', { mb: 512 }, { tenantId: 'tenant-a', runId: 'attack' })
    expect.soft('error' in res ? res : res.body, "the attack's answer").toMatchObject({ v: 2, kind: 'error', code: 'handler-throw', toolId: 'sync-alloc' })
    if (!('error' in res)) expect.soft(String(res.body?.message), 'the message').toContain('memMB 64')
    await stillServes(host)
  })
})
