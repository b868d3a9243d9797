// Finding 2: pack code raced the front for other callers' connections: fs.readSync and
// fs.writeSync on their socket fds (the permission model does not check an open fd). It read
// the token and ctx.secrets, and sent forged answers.
import { connect } from 'node:net'
import { describe, expect, it } from 'vitest'
import { sleep, TOKEN } from '../helpers/host.js'
import { rawInvoke, STRICT, stillServes, withHost } from './walls-helpers.js'

const SECRET = 'tenant-b-secret-for-finding-2'

/** Sends one invoke in 8-byte pieces, 20 ms apart (about 1.2 s), on a raw connection; resolves with what came back. */
function slowCaller(port: number): Promise<string> {
  const body = JSON.stringify({
    v: 2,
    kind: 'invoke',
    tool: { id: 'echo' },
    input: { from: 'tenant-b' },
    ctx: { tenantId: 'tenant-b', runId: 'r', secrets: { apiKey: SECRET } },
  })
  const request =
    `POST /v1/invoke HTTP/1.1\r\nhost: 127.0.0.1\r\ncontent-type: application/json\r\nkindgi-pack-token: ${TOKEN}\r\n` +
    `content-length: ${Buffer.byteLength(body)}\r\nconnection: close\r\n\r\n${body}`
  return new Promise((resolve) => {
    const socket = connect(port, '127.0.0.1')
    let got = ''
    const size = 8
    let at = 0
    const timer = setTimeout(() => socket.destroy(), 8_000)
    socket.on('connect', async () => {
      while (at < request.length && !socket.destroyed) {
        socket.write(request.slice(at, at + size))
        at += size
        await sleep(20)
      }
    })
    socket.on('data', (d) => (got += d.toString()))
    socket.on('error', () => undefined)
    socket.on('close', () => {
      clearTimeout(timer)
      resolve(got)
    })
  })
}

describe("finding 2: pack code cannot read or write other callers' connections", () => {
  it("under strict, a call spinning on fs.readSync over the process's sockets reads nothing of another caller's request, which is answered right", async () => {
    await withHost({ env: STRICT }, async (host) => {
      // A deadline near the attack's length (as for race-forge below): its fd scan blocks on
      // reading its own channel, so the call ends at its deadline.
      const attack = rawInvoke(host.port, 'race-read', { ms: 3000 }, { tenantId: 'tenant-a', runId: 'attack' }, 5_000)
      await sleep(300)
      const victim = await slowCaller(host.port)
      const attacked = await attack
      const stolen: string = 'error' in attacked ? '' : (attacked.body?.output?.stolen ?? '')
      expect.soft(stolen.includes(TOKEN), 'the attack read the service token').toBe(false)
      expect.soft(stolen.includes(SECRET), "the attack read another tenant's secret").toBe(false)
      expect.soft(stolen, 'bytes of other connections the attack read').toBe('')
      expect.soft(victim, "the victim's answer").toContain('{"v":2,"kind":"result","output":{"input":{"from":"tenant-b"},"tenantId":"tenant-b"}}')
      await stillServes(host)
    })
  })

  it("under strict, a call writing onto every connected socket forges no other caller's answer", async () => {
    await withHost({ env: STRICT }, async (host) => {
      const victim = rawInvoke(host.port, 'files-victim', { ms: 1500 }, { tenantId: 'tenant-b', runId: 'victim' })
      await sleep(200)
      const attack = await rawInvoke(host.port, 'race-forge', { ms: 800 }, { tenantId: 'tenant-a', runId: 'attack' }, 3_000)
      const answer = await victim
      expect.soft('error' in answer ? answer : answer.body, "the victim's answer").toEqual({ v: 2, kind: 'result', output: { slept: 1500 } })
      expect.soft('error' in attack ? attack : (attack.body?.output?.forgedOnto ?? 0), 'sockets the attack wrote onto').toBe(0)
      await stillServes(host)
    })
  })
})
