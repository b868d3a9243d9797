// Finding 5 (non-strict service): pack code ran code in the front's main thread through
// inspector.Session.connectToMainThread(): it read the token from the front's heap and made
// a fetch from a `network: none` tool.
import { createHash } from 'node:crypto'
import { createServer, type Server } from 'node:http'
import type { AddressInfo } from 'node:net'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { TOKEN } from '../helpers/host.js'
import { rawInvoke, stillServes, wallsHost } from './walls-helpers.js'

const sha = (s: string) => createHash('sha256').update(s).digest('hex')

describe('finding 5: pack code cannot run code in the front (non-strict service)', () => {
  const host = wallsHost()
  let server: Server
  let hits = 0
  beforeAll(async () => {
    server = createServer((_req, res) => {
      hits++
      res.end('reached')
    })
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve))
  })
  afterAll(async () => {
    server?.closeAllConnections()
    await new Promise((resolve) => server?.close(resolve))
  })

  it('no heap an inspector session of pack code reaches holds the token', async () => {
    // The front parses the call, so this canary (as long as the token) sits in the front's heap
    // while the call runs: today the search finds it, which proves it searched the front. Once
    // pack code runs elsewhere, a session reaches at most its own process's main thread, where
    // the canary need not be; so it is reported, not required.
    const canary = 'canary-abcdefghijklmn'
    expect(canary.length).toBe(TOKEN.length)
    const res = await rawInvoke(host.port, 'inspector-heap', { length: TOKEN.length, canary }, { tenantId: 'tenant-a', runId: 'attack' }, 20_000)
    const hashes: string[] = 'error' in res ? [] : (res.body?.output?.hashes ?? [])
    console.info(`inspector-heap: ${hashes.length} hashes, canary ${hashes.includes(sha(canary)) ? 'found' : 'not found'}`)
    expect.soft(hashes, 'hashes of the strings in the heap the session reached').not.toContain(sha(TOKEN))
    await stillServes(host)
  })

  it("a network-none tool cannot make a request through the front's main thread", async () => {
    const { port } = server.address() as AddressInfo
    const res = await rawInvoke(host.port, 'inspector-fetch', { url: `http://127.0.0.1:${port}/` }, { tenantId: 'tenant-a', runId: 'attack' })
    expect.soft(hits, 'requests that reached the outside server').toBe(0)
    expect.soft('error' in res ? res : (res.body?.output?.fetched ?? null), 'what the attack fetched').not.toBe('reached')
    await stillServes(host)
  })
})
