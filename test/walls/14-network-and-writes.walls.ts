// Finding 14: under network none a listening socket from net._createServerHandle still took
// inbound data; two context-isolated tools talked over a BroadcastChannel; a strict tool in a
// non-strict service truncated and chmod-ed a file through fds and wrote a report and a heap
// snapshot outside ctx.tmpDir.
import { existsSync, readdirSync, readFileSync, statSync, writeFileSync } from 'node:fs'
import { createServer, connect, type AddressInfo } from 'node:net'
import { join } from 'node:path'
import { describe, expect, it } from 'vitest'
import { sleep } from '../helpers/host.js'
import { rawInvoke, scratchDir, STRICT, stillServes, wallsHost } from './walls-helpers.js'

async function freePort(): Promise<number> {
  const server = createServer()
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve))
  const { port } = server.address() as AddressInfo
  await new Promise((resolve) => server.close(resolve))
  return port
}

/** Tries for up to `ms` to connect to the port and send `text`; true if a connection was accepted. */
async function knock(port: number, text: string, ms: number): Promise<boolean> {
  const until = Date.now() + ms
  while (Date.now() < until) {
    const accepted = await new Promise<boolean>((resolve) => {
      const socket = connect(port, '127.0.0.1')
      socket.once('connect', () => {
        socket.end(text)
        resolve(true)
      })
      socket.once('error', () => resolve(false))
    })
    if (accepted) return true
    await sleep(50)
  }
  return false
}

for (const posture of ['none', 'strict'] as const) {
  describe(`finding 14: under ${posture}, a network-none tool takes no inbound connection`, () => {
    const host = wallsHost({ env: posture === 'strict' ? STRICT : {} })

    it('a listening socket from net._createServerHandle accepts nothing and receives nothing', async () => {
      const port = await freePort()
      const attack = rawInvoke(host.port, 'raw-listen', { port, ms: 1500 }, { tenantId: 'tenant-a', runId: 'attack' })
      const accepted = await knock(port, 'hello-from-outside', 1200)
      const res = await attack
      expect.soft(accepted, "a connection to the tool's port was accepted").toBe(false)
      expect.soft(JSON.stringify('error' in res ? res : res.body), 'what the tool received').not.toContain('hello-from-outside')
      await stillServes(host)
    })
  })
}

describe('finding 14: in a non-strict service, posture promises hold past the in-worker guards', () => {
  const host = wallsHost()

  it('two context-isolated tools cannot talk over a BroadcastChannel', async () => {
    const listener = rawInvoke(host.port, 'side-listen', { ms: 1500 }, { tenantId: 'tenant-b', runId: 'listen' })
    await sleep(300)
    await rawInvoke(host.port, 'side-talk', { note: 'from-side-talk', ms: 800 }, { tenantId: 'tenant-a', runId: 'talk' })
    const heard = await listener
    expect.soft('error' in heard ? heard : heard.body, 'what the listening tool heard').toEqual({ v: 2, kind: 'result', output: { heard: [] } })
  })

  it('a strict tool neither truncates nor chmods a file outside ctx.tmpDir through a descriptor', async () => {
    const path = join(scratchDir('tamper'), 'keep.txt')
    writeFileSync(path, 'keep me', { mode: 0o600 })
    const res = await rawInvoke(host.port, 'fd-tamper', { path }, { tenantId: 'tenant-a', runId: 'attack' })
    expect.soft(readFileSync(path, 'utf8'), `the file's content (${JSON.stringify('error' in res ? res : res.body)})`).toBe('keep me')
    expect.soft(statSync(path).mode & 0o777, "the file's mode").toBe(0o600)
    await stillServes(host)
  })

  it('a strict tool writes no diagnostic report and no heap snapshot outside ctx.tmpDir', async () => {
    const dir = scratchDir('report')
    const res = await rawInvoke(host.port, 'report-out', { dir }, { tenantId: 'tenant-a', runId: 'attack' }, 20_000)
    expect.soft(readdirSync(dir), `files written outside ctx.tmpDir (${JSON.stringify('error' in res ? res : res.body).slice(0, 300)})`).toEqual([])
    expect(existsSync(dir)).toBe(true)
    await stillServes(host)
  })
})
