// docker/haproxy.cfg, run without Docker: Debian's haproxy with the same file (only the
// replicas' addresses, the listen address and the log target rewritten: no Compose DNS here)
// in front of real hosts and fake replicas on loopback. The promise: a call is sent again to
// another replica only when it provably never ran (the connection was never made, or the
// answer was 503), never after a 421, a 200, or a connection that broke once the call was
// sent; a replica whose /readyz fails or that stops answering is taken out by the checks.
// The same file runs in the real container rehearsal (test/container/compose.test.ts).
import { spawn, spawnSync, type ChildProcess } from 'node:child_process'
import { existsSync, mkdtempSync, readdirSync, readFileSync, writeFileSync } from 'node:fs'
import { request as httpRequest } from 'node:http'
import { connect, createServer, type Server, type Socket } from 'node:net'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { afterAll, describe, expect, it } from 'vitest'
import { invoke, invokeMessage, ROOT, sleep, spawnHost, TOKEN, type Host } from '../helpers/host.js'
import { invokeHead, rawExchange } from '../helpers/raw-exchange.js'
import { removeTempDir } from '../helpers/temp-dir.js'

const HAPROXY = ['/usr/sbin/haproxy', '/usr/bin/haproxy', '/usr/local/sbin/haproxy'].find((p) => existsSync(p))
// CI installs haproxy (.ci/run); a laptop without it skips these, and says so.
const skip = HAPROXY === undefined && process.env.CI === undefined
if (skip) console.warn('load-balancer tests skipped: no haproxy here (apt-get install haproxy)')

const started: Array<{ stop(): Promise<unknown> }> = []
const dirs: string[] = []
afterAll(async () => {
  await Promise.all(started.map((s) => s.stop()))
  for (const dir of dirs) removeTempDir(dir)
})

function freePort(): Promise<number> {
  return new Promise((resolve) => {
    const server = createServer().listen(0, '127.0.0.1', () => {
      const { port } = server.address() as { port: number }
      server.close(() => resolve(port))
    })
  })
}

async function waitForPort(port: number): Promise<void> {
  for (let i = 0; i < 200; i++) {
    const up = await new Promise<boolean>((resolve) => {
      const socket = connect(port, '127.0.0.1')
      socket.once('connect', () => {
        socket.destroy()
        resolve(true)
      })
      socket.once('error', () => resolve(false))
    })
    if (up) return
    await sleep(50)
  }
  throw new Error(`nothing listens on ${port}`)
}

/** docker/haproxy.cfg with its replicas at `ports` on loopback, listening on `listen`. */
function haproxyCfg(listen: number, ports: number[]): string {
  const cfg = readFileSync(join(ROOT, 'docker/haproxy.cfg'), 'utf8')
  const template = /^(\s*)server-template replica \S+ replica:\d+$/m.exec(cfg)
  expect(template).not.toBeNull()
  const servers = ports.map((p, i) => `${template![1]}server r${i} 127.0.0.1:${p}`).join('\n')
  return cfg
    .replace(template![0], servers)
    .replace(/^resolvers compose\n(?:[ \t]+.*\n)*/m, '')
    .replace(/ resolvers compose init-addr none$/m, '')
    .replace(/^(\s*)bind :8080$/m, `$1bind 127.0.0.1:${listen}`)
}

type Lb = { url: string; log: () => string; waitForLog(pattern: RegExp, timeoutMs?: number): Promise<void> }

async function startHaproxy(ports: number[]): Promise<Lb> {
  const dir = mkdtempSync(join(tmpdir(), 'kph-haproxy-'))
  dirs.push(dir)
  const listen = await freePort()
  writeFileSync(join(dir, 'haproxy.cfg'), haproxyCfg(listen, ports))
  const proc: ChildProcess = spawn(HAPROXY!, ['-db', '-f', join(dir, 'haproxy.cfg')], { stdio: ['ignore', 'pipe', 'pipe'] })
  let out = ''
  proc.stdout!.on('data', (d: Buffer) => (out += d.toString()))
  proc.stderr!.on('data', (d: Buffer) => (out += d.toString()))
  const exited = new Promise((resolve) => proc.once('exit', resolve))
  started.push({
    stop: () => {
      proc.kill('SIGTERM')
      return exited
    },
  })
  await waitForPort(listen)
  return {
    url: `http://127.0.0.1:${listen}`,
    log: () => out,
    async waitForLog(pattern, timeoutMs = 10_000) {
      const deadline = Date.now() + timeoutMs
      while (!pattern.test(out)) {
        if (Date.now() > deadline) throw new Error(`haproxy logged no ${pattern} within ${timeoutMs} ms:\n${out}`)
        await sleep(50)
      }
    },
  }
}

async function host(env: Record<string, string | undefined> = {}): Promise<Host> {
  const h = await spawnHost({ env })
  started.push(h)
  return h
}

/**
 * A fake replica: answers /readyz 200 (so the checks keep it in) until hang() is called, and
 * does `onInvoke` with the socket of every other request once its headers are in; counts the
 * invokes it received. Once hung, it accepts connections and answers nothing at all.
 */
async function fakeReplica(onInvoke: (socket: Socket) => void): Promise<{ port: number; invokes: () => number; hang: () => void }> {
  let invokes = 0
  let hung = false
  const sockets = new Set<Socket>()
  const server: Server = createServer((socket) => {
    sockets.add(socket)
    socket.once('close', () => sockets.delete(socket))
    let head = ''
    socket.on('data', (d: Buffer) => {
      if (hung) return
      head += d.toString('latin1')
      if (!head.includes('\r\n\r\n')) return
      if (head.startsWith('GET /readyz ')) {
        socket.end('HTTP/1.1 200 OK\r\ncontent-type: application/json\r\ncontent-length: 18\r\nconnection: close\r\n\r\n{"status":"ready"}')
        return
      }
      invokes += 1
      head = ''
      onInvoke(socket)
    })
    socket.on('error', () => undefined)
  })
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve))
  started.push({
    stop: () => {
      for (const s of sockets) s.destroy()
      return new Promise((r) => server.close(r))
    },
  })
  return { port: (server.address() as { port: number }).port, invokes: () => invokes, hang: () => (hung = true) }
}

/** The call lines a host wrote, once every line before a marker call made to it directly is read. */
async function callLines(h: Host): Promise<Array<Record<string, unknown>>> {
  const marker = `marker-${Math.random()}`
  await invoke(h, 'echo', {}, { 'kindgi-tenant-id': 'acme' }, { ctx: { tenantId: 'acme', runId: marker } })
  await h.waitFor('call', (l) => l.runId === marker)
  return h.lines.filter((l) => l.kind === 'call' && l.runId !== marker && typeof l.runId === 'string' && l.runId.startsWith('via-lb'))
}

async function refused(h: Host, reason: string): Promise<number> {
  const metricsPort = h.lines.find((l) => l.kind === 'listening')!.metricsPort
  const text = await (await fetch(`http://127.0.0.1:${metricsPort}/metrics`)).text()
  return Number(new RegExp(`^kindgi_pack_invokes_refused_total\\{reason="${reason}"\\} (\\d+)$`, 'm').exec(text)?.[1] ?? 0)
}

type Answered = { status: number; headers: Record<string, string | string[] | undefined>; body: any }

/**
 * One POST on a fresh connection, with node:http rather than fetch: the Fetch standard has
 * fetch send a request again by itself after a 421 on a reused connection, which would hide
 * what the balancer does.
 */
function post(url: string, message: unknown, headers: Record<string, string>): Promise<Answered> {
  return new Promise((resolve, reject) => {
    const body = JSON.stringify(message)
    const req = httpRequest(`${url}/v1/invoke`, {
      method: 'POST',
      agent: false,
      headers: { 'content-type': 'application/json', 'content-length': Buffer.byteLength(body), 'kindgi-pack-token': TOKEN, ...headers },
    })
    req.setTimeout(20_000, () => req.destroy(new Error('no answer within 20 s')))
    req.once('error', reject)
    req.once('response', (res) => {
      let text = ''
      res.setEncoding('utf8')
      res.on('data', (chunk: string) => (text += chunk))
      res.once('end', () => {
        let parsed: unknown = text
        try {
          parsed = JSON.parse(text)
        } catch {
          // the balancer's own page: keep the text
        }
        resolve({ status: res.statusCode ?? 0, headers: res.headers, body: parsed })
      })
    })
    req.end(body)
  })
}

/** n calls one after another through the load balancer, each with its own runId. */
async function viaLb(lb: Lb, n: number, batch: string, ctx: Record<string, string> = {}, headers: Record<string, string> = {}): Promise<Answered[]> {
  const answers: Answered[] = []
  for (let i = 0; i < n; i++) {
    const message = invokeMessage('echo', { i }, { ctx: { tenantId: 'acme', runId: `via-lb-${batch}-${i}`, ...ctx } })
    answers.push(await post(lb.url, message, { 'x-call-id': `via-lb-${batch}-${i}`, ...headers }))
  }
  return answers
}

describe.skipIf(skip)('docker/haproxy.cfg', () => {
  it('passes haproxy -c', () => {
    const dir = mkdtempSync(join(tmpdir(), 'kph-haproxy-c-'))
    dirs.push(dir)
    writeFileSync(join(dir, 'haproxy.cfg'), haproxyCfg(8080, [1]))
    const check = spawnSync(HAPROXY!, ['-c', '-f', join(dir, 'haproxy.cfg')], { encoding: 'utf8' })
    expect(check.stdout + check.stderr).toContain('Configuration file is valid')
    expect(check.status).toBe(0)
  })
})

describe.skipIf(skip)('a 503 is sent again to another replica', () => {
  it('every call is answered 200 and ran exactly once, on the replica that had room', async () => {
    // Ready (its /readyz says 200, so the checks keep it in) but at its cap: invokes get 503.
    const full = await host({ KINDGI_PACK_SERVICE_MAX_CONCURRENCY: '1', KINDGI_PACK_METRICS_PORT: '0' })
    // Held past the second replica's start, HAProxy's and the six calls, however slow; killed below.
    const busy = invoke(full, 'sleep', { ms: 30_000 })
    const roomy = await host()
    const lb = await startHaproxy([full.port, roomy.port])

    const answers = await viaLb(lb, 6, 'a')
    expect(answers.map((a) => a.status)).toEqual([200, 200, 200, 200, 200, 200])
    expect(answers.map((a) => a.body.output.i)).toEqual([0, 1, 2, 3, 4, 5])
    expect((await callLines(roomy)).map((l) => l.runId)).toEqual([0, 1, 2, 3, 4, 5].map((i) => `via-lb-a-${i}`))
    // Round robin sent some to the full replica, which said 503, and HAProxy went on.
    expect(await refused(full, 'overloaded')).toBeGreaterThanOrEqual(2)
    expect(lb.log()).toMatch(/lb-call id=via-lb-a-\d server=r1 status=200 retries=\+1 /)
    full.proc.kill('SIGKILL')
    await busy.catch(() => undefined)
    // Killed outright, it could not remove its strict calls' folder root: the test does.
    await full.exited
    for (const name of readdirSync(tmpdir())) if (name.startsWith(`kindgi-pack-host-${full.proc.pid}-`)) dirs.push(join(tmpdir(), name))
  })
})

describe.skipIf(skip)('a replica whose /readyz says 503 is taken out', () => {
  it('the checks mark it down, and every call goes to the one that is ready', async () => {
    const notReady = await host({ FIXTURE_REQUIRED: undefined })
    const ready = await host()
    const lb = await startHaproxy([notReady.port, ready.port])
    await lb.waitForLog(/Server pack_hosts\/r0 is DOWN/)
    const answers = await viaLb(lb, 4, 'b')
    expect(answers.map((a) => a.status)).toEqual([200, 200, 200, 200])
    expect(lb.log()).not.toMatch(/lb-call id=via-lb-b-\d server=r0/)
  })
})

describe.skipIf(skip)('when every replica answers 503', () => {
  it("the caller gets a 503: a replica's (with Retry-After) or, once all are down, HAProxy's own", async () => {
    const a = await host({ FIXTURE_REQUIRED: undefined })
    const b = await host({ FIXTURE_REQUIRED: undefined })
    const lb = await startHaproxy([a.port, b.port])
    const early = await viaLb(lb, 2, 'all-down-early')
    for (const x of early) {
      expect(x.status).toBe(503)
      if (typeof x.body === 'object') expect([x.body, x.headers['retry-after']]).toEqual([{ error: 'missing env', missingEnv: ['FIXTURE_REQUIRED'] }, '1'])
    }
    await lb.waitForLog(/backend pack_hosts has no server available/)
    const late = await viaLb(lb, 2, 'all-down-late')
    expect(late.map((x) => x.status)).toEqual([503, 503])
    await sleep(200) // call lines are written every 50 ms
    expect([...a.lines, ...b.lines].filter((l) => l.kind === 'call')).toEqual([])
  })
})

describe.skipIf(skip)('a connection never made is sent again; nothing else is', () => {
  it('a 421 and a 200 are answered as they are: each call ran on one replica only', async () => {
    const a = await host({ KINDGI_PACK_TENANT_ID: 'acme' })
    const b = await host({ KINDGI_PACK_TENANT_ID: 'acme' })
    const lb = await startHaproxy([a.port, b.port])

    const refusedCalls = await viaLb(lb, 4, 'refused', { tenantId: 'someone-else' }, { 'kindgi-tenant-id': 'acme' })
    expect(refusedCalls.map((r) => r.status)).toEqual([421, 421, 421, 421])
    const answered = await viaLb(lb, 4, 'answered', {}, { 'kindgi-tenant-id': 'acme' })
    expect(answered.map((r) => r.status)).toEqual([200, 200, 200, 200])

    const ran = [...(await callLines(a)), ...(await callLines(b))].map((l) => `${l.runId} ${l.outcome}`).sort()
    expect(ran).toEqual([...[0, 1, 2, 3].map((i) => `via-lb-answered-${i} ok`), ...[0, 1, 2, 3].map((i) => `via-lb-refused-${i} pack-tenant-mismatch`)])
  })

  it('a replica that refuses the connection: the call goes to another, and answers 200', async () => {
    const ready = await host()
    const dead = await freePort()
    const lb = await startHaproxy([dead, ready.port])
    const answers = await viaLb(lb, 4, 'c')
    expect(answers.map((a) => a.status)).toEqual([200, 200, 200, 200])
    expect((await callLines(ready)).map((l) => l.runId)).toEqual([0, 1, 2, 3].map((i) => `via-lb-c-${i}`))
  })

  it('a replica that takes the call and drops the connection: 502, never sent to another (it may have run)', async () => {
    const ready = await host()
    const dropper = await fakeReplica((socket) => socket.destroy())
    const lb = await startHaproxy([dropper.port, ready.port])
    const answers = await viaLb(lb, 4, 'd')
    const statuses = answers.map((a) => a.status)
    expect(statuses).toContain(502)
    expect(statuses.every((s) => s === 200 || s === 502)).toBe(true)
    // Every 502 is a call the dropper received, and none of those reached the real replica.
    expect(dropper.invokes()).toBe(statuses.filter((s) => s === 502).length)
    expect((await callLines(ready)).map((l) => l.runId)).toEqual(answers.flatMap((a, i) => (a.status === 200 ? [`via-lb-d-${i}`] : [])))
  })

  it('a replica that stops answering is taken out by its check, and calls after that go elsewhere', async () => {
    const ready = await host()
    const stuck = await fakeReplica(() => undefined)
    const lb = await startHaproxy([stuck.port, ready.port])
    await sleep(1_200) // two good checks: it is in
    stuck.hang() // from now on it accepts connections and answers nothing, not even /readyz
    await lb.waitForLog(/Server pack_hosts\/r0 is DOWN/, 10_000)
    const answers = await viaLb(lb, 4, 'e')
    expect(answers.map((a) => a.status)).toEqual([200, 200, 200, 200])
    expect(stuck.invokes()).toBe(0)
  })
})

describe.skipIf(skip)('a body over the limit, through the balancer', () => {
  it('a client that writes all of it before reading reads the 413, and the replica stays in', async () => {
    const replica = await host()
    const lb = await startHaproxy([replica.port])
    await sleep(1_200) // two good checks: it is in
    const big = Buffer.alloc(24 * 1024 * 1024, 0x20)
    // Before, the replica closed the connection with the body unread: HAProxy cut the client off.
    for (let i = 0; i < 3; i++) {
      const got = await rawExchange(Number(new URL(lb.url).port), invokeHead(big.length, TOKEN), big, /\}$/)
      expect(got.error).toBeUndefined()
      expect(got.text).toMatch(/^HTTP\/1\.1 413 [\s\S]*\{"error":"Request body too large"\}$/)
    }
    expect(lb.log()).not.toMatch(/pack_hosts\/r0 is DOWN/)
    expect((await viaLb(lb, 2, 'after-413')).map((a) => a.status)).toEqual([200, 200])
  })
})
