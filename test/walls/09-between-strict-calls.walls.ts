// Finding 9: strict calls are not apart. Tenant A's secret reached tenant B through a
// BroadcastChannel that module top-level code of pre-warmed strict spares listens on; and a
// V8 flag set by one call is in force for the next (flags are process-wide). And (found since)
// every strict process could read and write every call's tmpDir whose name it learnt.
import { existsSync } from 'node:fs'
import { describe, expect, it } from 'vitest'
import { rawInvoke, STRICT, stillServes, withHost } from './walls-helpers.js'

const SECRET_A = 'tenant-a-secret-for-finding-9'

describe('finding 9: nothing of one strict call reaches another', () => {
  it("under strict, tenant A's secret posted on a BroadcastChannel is not heard by tenant B's later call", async () => {
    await withHost({ env: STRICT }, async (host) => {
      // While A runs, the spares for the next calls start and their modules subscribe.
      const a = await rawInvoke(host.port, 'carry', { role: 'leak', ms: 1000 }, { tenantId: 'tenant-a', runId: 'a', secrets: { apiKey: SECRET_A } })
      expect(a).toMatchObject({ body: { v: 2, kind: 'result', output: { leaked: true } } })
      const b = await rawInvoke(host.port, 'carry', { role: 'collect', ms: 0 }, { tenantId: 'tenant-b', runId: 'b' })
      expect.soft('error' in b ? b : JSON.stringify(b.body), "what tenant B's call heard").not.toContain(SECRET_A)
      await stillServes(host)
    })
  })

  it('under strict, a V8 flag one call sets (natives syntax) is not in force in the next call', async () => {
    await withHost({ env: STRICT }, async (host) => {
      expect(await rawInvoke(host.port, 'v8-flags', { role: 'set' }, { tenantId: 'tenant-a', runId: 'a' })).toMatchObject({ body: { output: { set: true } } })
      const probe = await rawInvoke(host.port, 'v8-flags', { role: 'probe' }, { tenantId: 'tenant-b', runId: 'b' })
      expect.soft('error' in probe ? probe : probe.body, "the next call's view").toMatchObject({ v: 2, kind: 'result', output: { nativesSyntax: false } })
      await stillServes(host)
    })
  })

  it("under strict, a call given another running call's tmpDir can neither list it, read its files nor write there", async () => {
    await withHost({ env: STRICT }, async (host) => {
      const holding = rawInvoke(host.port, 'tmp-neighbour', { role: 'hold', secret: SECRET_A, ms: 3000 }, { tenantId: 'tenant-a', runId: 'a' })
      // It prints its tmpDir as a JSON line: a log record of its process (pack-records.ts).
      const { tmpDir } = (await host.waitFor('log', (l) => typeof l.tmpDir === 'string')) as unknown as { tmpDir: string }
      const reach = await rawInvoke(host.port, 'tmp-neighbour', { role: 'reach', path: tmpDir }, { tenantId: 'tenant-b', runId: 'b' })
      expect(reach).toMatchObject({ body: { v: 2, kind: 'result' } })
      const output = 'body' in reach ? reach.body.output : undefined
      expect.soft(output?.list, "tenant B listing A's tmpDir").toEqual({ denied: 'ERR_ACCESS_DENIED' })
      expect.soft(output?.read, "tenant B reading A's secret").toEqual({ denied: 'ERR_ACCESS_DENIED' })
      expect.soft(output?.plant, "tenant B writing into A's tmpDir").toEqual({ denied: 'ERR_ACCESS_DENIED' })
      expect.soft(existsSync(`${tmpDir}/planted.txt`), 'a file planted in A').toBe(false)
      expect(await holding).toMatchObject({ body: { v: 2, kind: 'result', output: { held: true, files: ['secret.txt'] } } })
      await stillServes(host)
    })
  })
})
