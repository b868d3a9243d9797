// The promises issue 17 made of the warm path and the front, seen from outside the real
// process: pack code's Atomics.wait is the runtime's own; a strict call the host cannot start
// (its folder gone) is answered 503 with its one call line; a shutdown that cuts calls logs no crash;
// a request the front cannot pass on gives its slot back.
import { readdirSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { describe, expect, it } from 'vitest'
import { CTX, FIXTURES, invoke, post, settled, sleep, spawnHost, within } from '../helpers/host.js'

describe("pack code's own Atomics.wait", () => {
  it("is the runtime's: a wait on an 8-byte buffer at index 0 returns ok when notified, in a warm worker", async () => {
    const host = await spawnHost({ index: `${FIXTURES}/atomics-pack/index.json` })
    try {
      for (let i = 0; i < 3; i++) {
        const res = await invoke(host, 'wait', {})
        expect(res.body).toEqual({ v: 2, kind: 'result', output: { result: 'ok', native: true } })
      }
    } finally {
      await host.stop()
    }
  })
})

describe('a strict call whose tmpDir is gone', () => {
  it('answers 503 with Retry-After, writes one call line (host-failed) and a call-not-started line; the service serves on and makes its folders again', async () => {
    const host = await spawnHost({ env: { KINDGI_PACK_SANDBOX: 'strict' } })
    try {
      expect((await invoke(host, 'echo', { before: true })).status).toBe(200)
      // The folder the call folders are made in, named after the front's pid: removed, with the
      // folder of the spare that waits for the next call (a /tmp cleaner could do this).
      const roots = readdirSync(tmpdir()).filter((name) => name.startsWith(`kindgi-pack-host-${host.proc.pid}-`))
      expect(roots).toHaveLength(1)
      const root = join(tmpdir(), roots[0] as string)
      // The spares started after that call have their folders: none made after the removal.
      expect(await settled(() => readdirSync(root).sort().join(' '), 500, 5_000), 'the spares have settled').toBe(true)
      rmSync(root, { recursive: true, force: true })
      const res = await invoke(host, 'echo', { during: true })
      expect(res.status).toBe(503)
      expect(res.headers.get('retry-after')).toBe('1')
      expect(res.body.error).toMatch(/^The host could not start the call: its tmpDir .+ is gone$/)
      await host.waitFor('call-not-started')
      expect(host.lines.filter((l) => l.kind === 'call').map((l) => l.outcome)).toEqual(['ok', 'host-failed'])
      expect(host.lines.find((l) => l.kind === 'call-not-started')).toMatchObject({ level: 'error', id: 'echo', why: expect.stringContaining('is gone') })
      // Spares started since have their folders again, in a root made again (under a new name:
      // call-tmp.ts); one started before may still answer 503.
      const after: number[] = []
      for (let i = 0; i < 5 && after.at(-1) !== 200; i++) after.push((await invoke(host, 'echo', { after: i })).status)
      expect(after.at(-1)).toBe(200)
      expect(after.slice(0, -1).every((status) => status === 503)).toBe(true)
      const again = readdirSync(tmpdir()).filter((name) => name.startsWith(`kindgi-pack-host-${host.proc.pid}-`))
      expect(again, 'the root, made again').toHaveLength(1)
      expect((await fetch(`${host.url}/healthz`)).status).toBe(200)
    } finally {
      await host.stop()
    }
  })
})

describe('a shutdown that cuts calls still running', () => {
  it.each(['none', 'strict'])(
    'logs no worker replacement and no crash under %s: the calls past the drain end with the service',
    async (posture) => {
      const host = await spawnHost({ env: { KINDGI_PACK_SANDBOX: posture } })
      const cut = [
        invoke(host, 'sleep', { ms: 60_000 }).catch(() => undefined),
        invoke(host, 'spin', {}, { 'kindgi-timeout-ms': '60000' }).catch(() => undefined),
      ]
      await sleep(300)
      host.proc.kill('SIGTERM')
      expect(await host.exited).toBe(0)
      await Promise.all(cut)
      const after = host.lines.slice(host.lines.findIndex((l) => l.kind === 'draining'))
      expect(after.filter((l) => l.kind === 'worker-replaced')).toEqual([])
      expect(after.filter((l) => l.kind === 'internal-error')).toEqual([])
      expect(after.at(-1)?.kind).toBe('stopped')
    },
    20_000,
  )
})

describe('an invoke the front cannot pass on', () => {
  it('gives its slot back: inputs nested too deep to re-serialize without ctx.toolFiles, past the cap, each answered 200 with one call line, and the next call runs', async () => {
    // A red-team pass (stop 35): on Node 24 the front's JSON.stringify of such a message (to
    // take toolFiles out) overflowed its stack, Hono answered 500, and the slot was never given
    // back: after the cap's worth of them every invoke answered 503 overloaded, for good.
    const host = await spawnHost({ env: { KINDGI_PACK_SERVICE_MAX_CONCURRENCY: '2' } })
    try {
      const depth = 200_000
      const ctx = JSON.stringify({ ...CTX, toolFiles: { url: 'http://127.0.0.1:9/tool-files', token: 'file-token' } })
      const deep = `{"v":2,"kind":"invoke","tool":{"id":"echo"},"input":{"a":${'['.repeat(depth)}${']'.repeat(depth)}},"ctx":${ctx}}`
      for (let i = 0; i < 4; i++) {
        const res = await post(host, deep)
        expect(res.status, JSON.stringify(res.body).slice(0, 300)).toBe(200)
        // Node 24: malformed-message, said so; Node 26 stringifies it, and echo answers it.
        expect(res.body.v).toBe(2)
        if (res.body.kind === 'error') expect(res.body).toMatchObject({ code: 'malformed-message', toolId: 'echo', message: expect.stringContaining('nested') })
        else expect(res.body.kind).toBe('result')
      }
      const next = await invoke(host, 'echo', { after: true })
      expect(next.status).toBe(200)
      expect(next.body).toEqual({ v: 2, kind: 'result', output: { after: true } })
      // Node 26 passes such inputs on (its JSON.stringify does not overflow), and they answer ok too.
      const callLines = () => host.lines.filter((l) => l.kind === 'call')
      await within(5_000, () => callLines().length >= 5)
      expect(callLines()).toHaveLength(5)
      expect(host.lines.filter((l) => l.kind === 'internal-error')).toEqual([])
    } finally {
      await host.stop()
    }
  })
})
