// docker/nginx.conf, run without Docker: Debian's nginx with the same file (only the
// upstream addresses, the listen port and /tmp rewritten) in front of real hosts on loopback.
// The promise: a call is retried on another replica only when the answer was 503 (the call
// provably never ran), never after a 421, a 200, or a broken connection.
import { spawn, spawnSync, type ChildProcess } from 'node:child_process'
import { chmodSync, existsSync, mkdtempSync, readFileSync, writeFileSync } from 'node:fs'
import { connect, createServer } from 'node:net'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { afterAll, describe, expect, it } from 'vitest'
import { request as httpRequest } from 'node:http'
import { invoke, invokeMessage, ROOT, sleep, spawnHost, TOKEN, type Host } from '../helpers/host.js'

const NGINX = ['/usr/sbin/nginx', '/usr/bin/nginx', '/usr/local/sbin/nginx'].find((p) => existsSync(p))
// CI installs nginx (.ci/run); a laptop without it skips these, and says so.
const skip = NGINX === undefined && process.env.CI === undefined
if (skip) console.warn('load-balancer tests skipped: no nginx here (apt-get install nginx-light)')

const started: Array<{ stop(): Promise<unknown> }> = []
afterAll(async () => {
  await Promise.all(started.map((s) => s.stop()))
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
      socket.once('connect', () => (socket.destroy(), resolve(true)))
      socket.once('error', () => resolve(false))
    })
    if (up) return
    await sleep(50)
  }
  throw new Error(`nothing listens on ${port}`)
}

/** docker/nginx.conf with its upstream pointed at `ports` on loopback. */
function nginxConf(dir: string, listen: number, ports: number[]): string {
  const conf = readFileSync(join(ROOT, 'docker/nginx.conf'), 'utf8')
  const server = /^(\s*)server replica:\d+(.*);$/m.exec(conf)
  expect(server).not.toBeNull()
  const upstream = ports.map((p) => `${server![1]}server 127.0.0.1:${p}${server![2]};`).join('\n')
  return conf
    .replace(server![0], upstream)
    .replace(/^(\s*)listen \d+;$/m, `$1listen 127.0.0.1:${listen};`)
    .replaceAll('/tmp/', `${dir}/`)
    // Node's child pipes are sockets, which /dev/stderr cannot be opened on; files instead.
    .replace('/dev/stderr', join(dir, 'error.log'))
    .replace('/dev/stdout', join(dir, 'access.log'))
}

async function startNginx(ports: number[]): Promise<string> {
  const dir = mkdtempSync(join(tmpdir(), 'kph-nginx-'))
  chmodSync(dir, 0o755) // nginx workers run as another user when the test runs as root
  const listen = await freePort()
  writeFileSync(join(dir, 'nginx.conf'), nginxConf(dir, listen, ports))
  const proc: ChildProcess = spawn(NGINX!, ['-e', join(dir, 'error.log'), '-p', dir, '-c', join(dir, 'nginx.conf'), '-g', 'daemon off;'], { stdio: 'ignore' })
  const exited = new Promise((resolve) => proc.once('exit', resolve))
  started.push({ stop: () => (proc.kill('SIGTERM'), exited) })
  await waitForPort(listen)
  return `http://127.0.0.1:${listen}`
}

async function host(env: Record<string, string | undefined> = {}): Promise<Host> {
  const h = await spawnHost({ env })
  started.push(h)
  return h
}

/** The call lines a host wrote, once every line before a marker call made to it directly is read. */
async function callLines(h: Host): Promise<Array<Record<string, unknown>>> {
  const marker = `marker-${Math.random()}`
  await invoke(h, 'echo', {}, { 'kindgi-tenant-id': 'acme' }, { ctx: { tenantId: 'acme', runId: marker } })
  await h.waitFor('call', (l) => l.runId === marker)
  return h.lines.filter((l) => l.kind === 'call' && l.runId !== marker && typeof l.runId === 'string' && l.runId.startsWith('via-lb'))
}

type Answered = { status: number; headers: Record<string, string | string[] | undefined>; body: any }

/**
 * One POST on a fresh connection, with node:http rather than fetch: the Fetch standard has
 * fetch send a request again by itself after a 421 on a reused connection, which would hide
 * what nginx does (a caller using fetch sees that retry too; harmless, the call never ran).
 */
function post(url: string, message: unknown, headers: Record<string, string>): Promise<Answered> {
  return new Promise((resolve, reject) => {
    const body = JSON.stringify(message)
    const req = httpRequest(`${url}/v1/invoke`, {
      method: 'POST',
      agent: false,
      headers: { 'content-type': 'application/json', 'content-length': Buffer.byteLength(body), 'kindgi-pack-token': TOKEN, ...headers },
    })
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
          // an nginx error page: keep the text
        }
        resolve({ status: res.statusCode ?? 0, headers: res.headers, body: parsed })
      })
    })
    req.end(body)
  })
}

/** n calls one after another through the load balancer, each with its own runId. */
async function viaLb(lb: string, n: number, batch: string, ctx: Record<string, string> = {}, headers: Record<string, string> = {}): Promise<Answered[]> {
  const answers: Answered[] = []
  for (let i = 0; i < n; i++) {
    const message = invokeMessage('echo', { i }, { ctx: { tenantId: 'acme', runId: `via-lb-${batch}-${i}`, ...ctx } })
    answers.push(await post(lb, message, headers))
  }
  return answers
}

describe.skipIf(skip)('docker/nginx.conf', () => {
  it('passes nginx -t', () => {
    const dir = mkdtempSync(join(tmpdir(), 'kph-nginx-t-'))
    writeFileSync(join(dir, 'nginx.conf'), nginxConf(dir, 8080, [1]))
    const check = spawnSync(NGINX!, ['-t', '-e', join(dir, 'error.log'), '-p', dir, '-c', join(dir, 'nginx.conf')], { encoding: 'utf8' })
    expect(check.stderr).toContain('test is successful')
    expect(check.status).toBe(0)
  })
})

describe.skipIf(skip)('a 503 is retried on another replica', () => {
  it('every call is answered 200 and ran exactly once, on the replica that was ready', async () => {
    const notReady = await host({ FIXTURE_REQUIRED: undefined, KINDGI_PACK_METRICS_PORT: '0' })
    const ready = await host()
    const lb = await startNginx([notReady.port, ready.port])

    const answers = await viaLb(lb, 6, 'a')
    expect(answers.map((a) => a.status)).toEqual([200, 200, 200, 200, 200, 200])
    expect(answers.map((a) => a.body.output.i)).toEqual([0, 1, 2, 3, 4, 5])
    expect((await callLines(ready)).map((l) => l.runId)).toEqual([0, 1, 2, 3, 4, 5].map((i) => `via-lb-a-${i}`))

    // The not-ready replica was asked (and said 503) before nginx went elsewhere.
    const metricsPort = notReady.lines.find((l) => l.kind === 'listening')!.metricsPort
    const text = await (await fetch(`http://127.0.0.1:${metricsPort}/metrics`)).text()
    expect(Number(/^kindgi_pack_invokes_refused_total\{reason="missing-env"\} (\d+)$/m.exec(text)?.[1])).toBeGreaterThanOrEqual(1)
  })
})

describe.skipIf(skip)('when every replica answers 503', () => {
  it('the caller gets a 503 from a replica (with Retry-After), never a 502 from nginx', async () => {
    const a = await host({ FIXTURE_REQUIRED: undefined })
    const b = await host({ FIXTURE_REQUIRED: undefined })
    const lb = await startNginx([a.port, b.port])
    const answers = await viaLb(lb, 4, 'all-down')
    expect(answers.map((x) => x.status)).toEqual([503, 503, 503, 503])
    expect(answers.map((x) => x.body)).toEqual(Array(4).fill({ error: 'missing env', missingEnv: ['FIXTURE_REQUIRED'] }))
    expect(answers.map((x) => x.headers['retry-after'])).toEqual(['1', '1', '1', '1'])
  })
})

describe.skipIf(skip)('nothing else is retried', () => {
  it('a 421 and a 200 are answered as they are: each call ran on one replica only', async () => {
    const a = await host({ KINDGI_PACK_TENANT_ID: 'acme' })
    const b = await host({ KINDGI_PACK_TENANT_ID: 'acme' })
    const lb = await startNginx([a.port, b.port])

    const refused = await viaLb(lb, 4, 'refused', { tenantId: 'someone-else' }, { 'kindgi-tenant-id': 'acme' })
    expect(refused.map((r) => r.status)).toEqual([421, 421, 421, 421])
    const answered = await viaLb(lb, 4, 'answered', {}, { 'kindgi-tenant-id': 'acme' })
    expect(answered.map((r) => r.status)).toEqual([200, 200, 200, 200])

    const ran = [...(await callLines(a)), ...(await callLines(b))].map((l) => `${l.runId} ${l.outcome}`).sort()
    expect(ran).toEqual([
      ...[0, 1, 2, 3].map((i) => `via-lb-answered-${i} ok`),
      ...[0, 1, 2, 3].map((i) => `via-lb-refused-${i} pack-tenant-mismatch`),
    ])
  })

  it('a replica that refuses the connection is answered 502, not retried elsewhere', async () => {
    const ready = await host()
    const dead = await freePort()
    const lb = await startNginx([dead, ready.port])

    const answers = await viaLb(lb, 4, 'c')
    const statuses = answers.map((a) => a.status)
    expect(statuses).toContain(502)
    expect(statuses.every((s) => s === 200 || s === 502)).toBe(true)
    const ran = (await callLines(ready)).map((l) => l.runId)
    expect(ran).toEqual(answers.flatMap((a, i) => (a.status === 200 ? [`via-lb-c-${i}`] : [])))
  })
})
