// docker/Dockerfile built and run on a real engine with exactly the README's flags (only the
// port, the two host paths, the token file's group and the tag filled in), checked from
// outside: a published loopback port, `docker exec`, `docker inspect`, `docker top`.
// Base images on these machines are local stand-ins (the setup prints which): node:24-bookworm-slim
// is Debian bookworm minbase + Node 24 from npm, not the official image.
import { chmodSync, chownSync, cpSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest'
import { docker, DOCKER, dockerOk, freePort, http, IMAGE, invokeBody, logLines, ROOT, run, sleep, until, type Answer } from './engine.js'
import { matchesReadme, readmeBakeArgs, readmeCurlSession, readmeRunArgs, readmeTokenMode } from './readme-run.js'
import { readmeBuildArgs } from './setup.js'
import { probeLandlock } from '../../src/pool/landlock.js'

const engine = inject('engine')
const TOKEN = 'container-test-token'
/** The token file's group, which the README's --group-add gives the container: as root, a group no user here has. */
const TOKEN_GID = process.getuid?.() === 0 ? 4242 : (process.getgid?.() ?? 0)
const PREFIX = `kph-ct-${process.pid}`
const BAKED = `kph-baked:container-test-${process.pid}`
const ON_26 = 'kindgi-pack-host:container-test-node26'
const made: string[] = []

const work = mkdtempSync(join(tmpdir(), 'kph-container-'))
chmodSync(work, 0o755)

function tokenFile(name: string, mode: number, gid: number): string {
  const file = join(work, name)
  writeFileSync(file, `${TOKEN}\n`)
  chmodSync(file, mode)
  chownSync(file, process.getuid?.() ?? 0, gid)
  return file
}

type Started = { id: string; name: string; port: number; readyMs: number }
type StartOptions = { pack: string | undefined; token: string; image?: string; walled?: boolean }

/**
 * The README's docker run for one container: its flags, this test's paths, a --name; walled
 * adds --network none (and publishes nothing: there is no network to publish on).
 */
async function runArgs(name: string, opts: StartOptions): Promise<{ args: string[]; port: number }> {
  const port = await freePort()
  const args = readmeRunArgs({ hostPort: port, tokenFile: opts.token, packDir: opts.pack, tokenGid: TOKEN_GID, image: opts.image ?? IMAGE })
  const image = args.pop() as string
  const p = args.indexOf('-p')
  if (opts.walled === true) args.splice(p, 2, '--network', 'none')
  made.push(`${PREFIX}-${name}`)
  return { args: [...args, '--name', `${PREFIX}-${name}`, image], port }
}

/** Starts a container detached and, unless walled, waits for /readyz 200 on its published port. */
async function start(name: string, opts: StartOptions): Promise<Started> {
  const { args, port } = await runArgs(name, opts)
  const t0 = performance.now()
  const id = (await dockerOk(args, { timeoutMs: 60_000 })).trim()
  let readyMs = 0
  if (opts.walled !== true) {
    await until(
      `${name}: /readyz 200`,
      async () => ((await http(`http://127.0.0.1:${port}/readyz`, { timeoutMs: 1_000 })).status === 200 ? true : undefined),
      30_000,
      25,
    )
    readyMs = performance.now() - t0
  }
  return { id, name: `${PREFIX}-${name}`, port, readyMs }
}

/** An HTTP exchange made inside a container's own network namespace (for --network none). */
function execCall(container: string, path: string, body?: string): Promise<Answer> {
  return callWith(['exec', container], path, body)
}

/**
 * The same from a container of its own that shares `container`'s network namespace: a client
 * that `docker exec` started dies with the container it runs in, possibly before it has printed
 * an answer it received just before that container stopped.
 */
function callBeside(container: string, path: string, body?: string): Promise<Answer> {
  return callWith(['run', '--rm', '--network', `container:${container}`, IMAGE], path, body)
}

/** Runs a one-call node client with `how` (docker exec into, or docker run beside, a container). */
async function callWith(how: string[], path: string, body: string | undefined): Promise<Answer> {
  const script = `const [u, t, b] = process.argv.slice(1); const r = await fetch('http://127.0.0.1:8080' + u, { method: b ? 'POST' : 'GET', headers: { 'kindgi-pack-token': t, 'content-type': 'application/json' }, body: b || undefined }); console.log(JSON.stringify({ status: r.status, text: await r.text() }))`
  const t0 = performance.now()
  const ran = await docker([...how, 'node', '--input-type=module', '-e', script, path, TOKEN, body ?? ''], { timeoutMs: 30_000 })
  if (ran.code !== 0) return { status: 0, body: undefined, text: ran.stderr, ms: performance.now() - t0 }
  const { status, text } = JSON.parse(ran.stdout) as { status: number; text: string }
  let parsed: unknown = text
  try {
    parsed = JSON.parse(text)
  } catch {
    // keep the text
  }
  return { status, text, body: parsed, ms: performance.now() - t0 }
}

const call = (port: number, tool: string, input: unknown, runId = 'r1') =>
  http(`http://127.0.0.1:${port}/v1/invoke`, {
    method: 'POST',
    headers: { 'kindgi-pack-token': TOKEN, 'content-type': 'application/json' },
    body: invokeBody(tool, input, runId),
  })

afterAll(async () => {
  if (made.length > 0) await docker(['rm', '-f', ...made], { timeoutMs: 60_000 })
  await docker(['rmi', '-f', BAKED], { timeoutMs: 60_000 })
  rmSync(work, { recursive: true, force: true })
})

describe.skipIf(engine.skip !== undefined)('the image, run with the README flags and examples/hello-pack', () => {
  let c: Started
  beforeAll(async () => {
    c = await start('readme', { pack: join(ROOT, 'examples/hello-pack'), token: tokenFile('token', readmeTokenMode(), TOKEN_GID) })
    console.log(`container tests: docker run to /readyz 200: ${c.readyMs.toFixed(0)} ms`)
  })

  it('listens on 8080 in the container, published on loopback, and is ready; its pack processes are walled in by Landlock where this kernel can', async () => {
    const listening = (await logLines(c.id)).find((l) => l.kind === 'listening')
    expect(listening).toMatchObject({ port: 8080, packId: 'hello' })
    // The image's own helper, under the README flags (no capability, the engine's default seccomp profile).
    const kernel = probeLandlock(join(ROOT, 'dist/workers/native/landlock-exec'))
    expect(listening, `the host's own probe: ${JSON.stringify(kernel)}`).toMatchObject(kernel.kind === 'on' ? { landlock: 'on' } : { landlock: 'off' })
    expect((await http(`http://127.0.0.1:${c.port}/readyz`)).body).toEqual({ status: 'ready' })
    expect(c.readyMs).toBeLessThan(15_000)
  })

  it("answers the README's curl session line for line", async () => {
    const steps = readmeCurlSession(c.port)
    expect(steps.length).toBeGreaterThanOrEqual(4)
    for (const step of steps) {
      const ran = await run('curl', ['--max-time', '10', ...step.args.map((a) => a.replace('dev-token', TOKEN))])
      expect(ran.code, step.args.join(' ')).toBe(0)
      expect(matchesReadme(ran.stdout, step.expected), `${ran.stdout}\n  vs README: ${step.expected}`).toBe(true)
    }
  })

  it('runs as 10001:10001, every process', async () => {
    expect((await dockerOk(['inspect', '--format', '{{.Config.User}}', c.id])).trim()).toBe('10001:10001')
    const top = (await dockerOk(['top', c.id, '-o', 'pid,uid,gid,args'])).trim().split('\n').slice(1)
    expect(top.length).toBeGreaterThanOrEqual(3) // docker-init, the launcher, the served process
    for (const row of top) expect(row.trim().split(/\s+/).slice(1, 3), row).toEqual(['10001', '10001'])
  })

  it('has no capability and cannot gain one (no-new-privileges), in every process', async () => {
    const status = await dockerOk(['exec', c.id, 'sh', '-c', 'grep -H -E "^(Cap(Inh|Prm|Eff|Bnd|Amb)|NoNewPrivs):" /proc/[0-9]*/status'])
    const lines = status.trim().split('\n')
    expect(lines.length).toBeGreaterThanOrEqual(18)
    for (const line of lines) {
      const [, field, value] = /:(\w+):\s+(\S+)$/.exec(line) ?? []
      expect(value, line).toBe(field === 'NoNewPrivs' ? '1' : '0000000000000000')
    }
  })

  it('has a read-only root; /tmp is the only writable place, and nothing there can be executed', async () => {
    expect((await dockerOk(['inspect', '--format', '{{.HostConfig.ReadonlyRootfs}}', c.id])).trim()).toBe('true')
    const touch = await docker(['exec', c.id, 'touch', '/app/written'])
    expect(touch.code).not.toBe(0)
    expect(touch.stderr).toMatch(/Read-only file system/)
    const mounts = await dockerOk(['exec', c.id, 'cat', '/proc/mounts'])
    expect(mounts).toMatch(/^tmpfs \/tmp tmpfs rw,nosuid,nodev,noexec\b/m)
    expect(mounts).toMatch(/^\S+ \/run\/secrets\/kindgi-pack\/token \S+ ro[,\s]/m)
    expect(mounts).toMatch(/^\S+ \/app\/pack \S+ ro[,\s]/m)
  })

  it('reports healthy through its HEALTHCHECK', async () => {
    const health = await until(
      'HEALTHCHECK healthy',
      async () => {
        const status = (await dockerOk(['inspect', '--format', '{{.State.Health.Status}}', c.id])).trim()
        return status === 'healthy' ? status : undefined
      },
      45_000,
      500,
    )
    expect(health).toBe('healthy')
  })

  it('docker stop: drains and exits 0', async () => {
    const waited = docker(['wait', c.id], { timeoutMs: 30_000 })
    await dockerOk(['stop', c.id], { timeoutMs: 30_000 })
    expect((await waited).stdout.trim()).toBe('0')
  })
})

describe.skipIf(engine.skip !== undefined)("a token file user 10001 cannot read (0600, root's)", () => {
  it('stops the container at once, exit 1, with one config-invalid line naming the file and EACCES', async () => {
    const { args } = await runArgs('unreadable', { pack: join(ROOT, 'examples/hello-pack'), token: tokenFile('token-0600', 0o600, 0) })
    // Attached (no -d): the exit code and the log come back with `docker run` itself.
    const ran = await docker(
      args.filter((a) => a !== '-d'),
      { timeoutMs: 60_000 },
    )
    expect(ran.code).toBe(1)
    const lines = ran.stderr
      .split('\n')
      .filter((l) => l.startsWith('{'))
      .map((l) => JSON.parse(l) as { kind?: string; problems?: string[] })
    expect(lines.map((l) => l.kind)).toEqual(['config-invalid'])
    expect(lines[0]!.problems).toEqual([expect.stringMatching(/^KINDGI_PACK_SERVICE_TOKEN_FILE \/run\/secrets\/kindgi-pack\/token cannot be read: EACCES/)])
  })
})

describe.skipIf(engine.skip !== undefined)('the image under --network none, with a pack that tries to get out', () => {
  let c: Started
  beforeAll(async () => {
    const pack = join(work, 'container-pack')
    cpSync(join(ROOT, 'test/fixtures/container-pack'), pack, { recursive: true })
    c = await start('walled', { pack, token: tokenFile('token-walled', readmeTokenMode(), TOKEN_GID), walled: true })
    await until('walled: /readyz 200', async () => ((await execCall(c.id, '/readyz')).status === 200 ? true : undefined), 30_000, 200)
  })

  it('serves a strict call in a fresh realm every time: no module state or global survives', async () => {
    for (let i = 0; i < 2; i++) {
      expect((await execCall(c.id, '/v1/invoke', invokeBody('state', {}, `state-${i}`))).body).toEqual({
        v: 2,
        kind: 'result',
        output: { moduleCalls: 1, globalCalls: 1 },
      })
    }
  })

  it('refuses pack code a write outside its ctx.tmpDir, though the file system would allow it', async () => {
    for (const path of ['/tmp/escaped.txt', '/app/pack/escaped.txt']) {
      const answer = await execCall(c.id, '/v1/invoke', invokeBody('write', { path }, 'write'))
      expect(answer.body.output, path).toMatchObject({ inside: 'mine', outside: 'denied: ERR_ACCESS_DENIED' })
      expect(answer.body.output.tmpDir).toMatch(/^\/tmp\/kindgi-pack-host-[^/]+\/call-/)
    }
    expect((await docker(['exec', c.id, 'test', '-e', '/tmp/escaped.txt'])).code).toBe(1)
  })

  it('keeps the token file from pack code, though user 10001 itself can read it', async () => {
    const answer = await execCall(c.id, '/v1/invoke', invokeBody('read-file', { path: '/run/secrets/kindgi-pack/token' }, 'token'))
    expect(answer.body).toEqual({ v: 2, kind: 'result', output: { denied: 'ERR_ACCESS_DENIED' } })
    expect((await dockerOk(['exec', c.id, 'cat', '/run/secrets/kindgi-pack/token'])).trim()).toBe(TOKEN)
  })

  it('runs a network-none tool as usual; the container itself has no route out', async () => {
    expect((await execCall(c.id, '/v1/invoke', invokeBody('echo', { hello: 'wall' }, 'echo'))).body).toEqual({
      v: 2,
      kind: 'result',
      output: { hello: 'wall' },
    })
    // A tool the index lets onto the network finds none: only loopback exists.
    const out = await execCall(c.id, '/v1/invoke', invokeBody('dial', { host: '192.0.2.1', port: 80, ms: 3000 }, 'dial'))
    expect(out.body.output).toEqual({ error: 'ENETUNREACH' })
    const routes = (await dockerOk(['exec', c.id, 'cat', '/proc/net/route'])).trim().split('\n')
    expect(routes).toHaveLength(1) // the header line: no route at all
    expect((await dockerOk(['exec', c.id, 'ls', '/sys/class/net'])).trim()).toBe('lo')
  })

  it('docker stop with a call in flight: the call finishes, new calls get 503, exit 0', async () => {
    // Its client outlives the container, which stops the moment the call has been answered.
    const inFlight = callBeside(c.id, '/v1/invoke', invokeBody('slow-echo', { ms: 4000, n: 1 }, 'in-flight'))
    // The call is in once a connection to 8080 is established: st 01, local port 1F90, in
    // /proc/net/tcp6 (the host listens on :: and takes IPv4 there) or /proc/net/tcp.
    const connected = / [0-9A-F]+:1F90 [0-9A-F]+:[0-9A-F]{4} 01 /
    const tcp = async () => (await dockerOk(['exec', c.id, 'cat', '/proc/net/tcp', '/proc/net/tcp6'])).split('\n')
    await until('the in-flight call connected', async () => ((await tcp()).some((l) => connected.test(l)) ? true : undefined), 20_000, 50)
    await sleep(300)
    const waited = docker(['wait', c.id], { timeoutMs: 30_000 })
    const stopped = docker(['stop', c.id], { timeoutMs: 30_000 })
    await until('draining', async () => ((await logLines(c.id)).some((l) => l.kind === 'draining') ? true : undefined), 15_000, 50)
    const refused = await execCall(c.id, '/v1/invoke', invokeBody('echo', {}, 'late'))
    expect(refused).toMatchObject({ status: 503, body: { error: 'draining' } })
    expect((await inFlight).body).toEqual({ v: 2, kind: 'result', output: { ms: 4000, n: 1 } })
    await stopped
    expect((await waited).stdout.trim()).toBe('0')
  })
})

describe.skipIf(engine.skip !== undefined)('a pack baked into its own image (docker/pack.Dockerfile.example)', () => {
  it("builds FROM the host image, serves without a pack mount, and pack files are root's", async () => {
    const dir = join(work, 'bake')
    cpSync(join(ROOT, 'examples/hello-pack'), dir, { recursive: true })
    cpSync(join(ROOT, 'docker/pack.Dockerfile.example'), join(dir, 'pack.Dockerfile'))
    writeFileSync(join(dir, '.dockerignore'), 'pack.Dockerfile\n.dockerignore\n')
    const built = await run(DOCKER, readmeBakeArgs(IMAGE, BAKED), { cwd: dir, timeoutMs: 120_000, env: { ...process.env, DOCKER_BUILDKIT: '1' } })
    expect(built.code, built.stderr).toBe(0)
    const c = await start('baked', { pack: undefined, token: tokenFile('token-baked', readmeTokenMode(), TOKEN_GID), image: BAKED })
    const info = await http(`http://127.0.0.1:${c.port}/v1/info`, { headers: { 'kindgi-pack-token': TOKEN } })
    expect(info.body).toMatchObject({ packId: 'hello', missingEnv: [] })
    expect((await call(c.port, 'hello.greet', { name: 'Ana' })).body).toEqual({ v: 2, kind: 'result', output: { greeting: 'Hello, Ana!' } })
    const owners = await dockerOk(['exec', c.id, 'stat', '-c', '%u:%g %a %n', '/app/pack/index.json', '/app/pack/tools/greet.ts'])
    for (const line of owners.trim().split('\n')) expect(line).toMatch(/^0:0 644 /)
    expect((await docker(['exec', c.id, 'ls', '/app/pack/pack.Dockerfile'])).code).not.toBe(0)
  })
})

describe.skipIf(engine.skip !== undefined || engine.node26Image === undefined)('the same Dockerfile on Node 26: one build argument', () => {
  it('builds with --build-arg NODE_IMAGE=<a Node 26 image> and serves strict calls under the README flags', async () => {
    const built = await docker([...readmeBuildArgs(ON_26), '--build-arg', `NODE_IMAGE=${engine.node26Image}`], {
      timeoutMs: 240_000,
      env: { ...process.env, DOCKER_BUILDKIT: '1' },
    })
    expect(built.code, built.stderr.slice(-2000)).toBe(0)
    const c = await start('node26', { pack: join(ROOT, 'examples/hello-pack'), token: tokenFile('token-26', readmeTokenMode(), TOKEN_GID), image: ON_26 })
    expect((await dockerOk(['exec', c.id, 'node', '--version'])).trim()).toMatch(/^v26\./)
    expect((await call(c.port, 'hello.greet', { name: 'Ana' })).body).toEqual({ v: 2, kind: 'result', output: { greeting: 'Hello, Ana!' } })
    // A network-none, context-isolated tool in the index: strict here, under 26's permission flags.
    expect((await call(c.port, 'hello.weather', { city: 'Oslo' })).body).toMatchObject({ v: 2, kind: 'result', output: { city: 'Oslo' } })
    const top = await dockerOk(['top', c.id, '-o', 'pid,args'])
    expect(top).toMatch(/--permission .*--allow-net/)
    const waited = docker(['wait', c.id], { timeoutMs: 30_000 })
    await dockerOk(['stop', c.id], { timeoutMs: 30_000 })
    expect((await waited).stdout.trim()).toBe('0')
  })
})
