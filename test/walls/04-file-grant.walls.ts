// Finding 4: pack code used another call's file grant. It posted a kindgi-files message on
// parentPort with another call's id (ids are a plain counter); the runtime's file store
// received a read with the other tenant's Bearer token.
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { sleep } from '../helpers/host.js'
import { startFakeFileStore, type FakeFileStore } from '../helpers/fake-file-store.js'
import { rawInvoke, STRICT, stillServes, withHost } from './walls-helpers.js'

const TENANT_B_FILE_TOKEN = 'tenant-b-file-token-for-finding-4'

describe("finding 4: pack code cannot use another call's file grant", () => {
  let store: FakeFileStore
  beforeAll(async () => {
    store = await startFakeFileStore(TENANT_B_FILE_TOKEN)
  })
  afterAll(async () => {
    await store?.close()
  })

  it("under strict, kindgi-files messages naming other call ids reach the file store with no other tenant's token", async () => {
    await withHost({ env: STRICT }, async (host) => {
      // Tenant B's call holds a grant (it may read files) and never uses it.
      const victim = rawInvoke(
        host.port,
        'files-victim',
        { ms: 1500 },
        { tenantId: 'tenant-b', runId: 'victim', toolFiles: { url: store.url, token: TENANT_B_FILE_TOKEN } },
      )
      await sleep(300)
      const attack = await rawInvoke(host.port, 'steal-file-grant', { upTo: 50, artifactId: 'anything' }, { tenantId: 'tenant-a', runId: 'attack' })
      expect.soft(await victim, "the victim's answer").toMatchObject({ body: { v: 2, kind: 'result', output: { slept: 1500 } } })
      const withB = store.received.filter((r) => r.headers.authorization === `Bearer ${TENANT_B_FILE_TOKEN}`)
      expect
        .soft(
          withB.map((r) => `${r.method} ${r.path}`),
          "requests the file store got with tenant B's token",
        )
        .toEqual([])
      expect.soft('error' in attack ? attack : attack.body?.output?.replies, 'replies the attack got').toEqual([])
      await stillServes(host)
    })
  })
})
