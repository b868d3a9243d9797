// `docker compose up` (the root compose.yaml, which includes docker/compose.yaml) on a real
// engine: the dev service serves and reloads with --watch, and the scale profile's replicas
// behind HAProxy lose no call while one drains, while it is gone and after one is SIGKILLed.
// The one change to the files: an override mounting this test's packs (a copy of
// examples/hello-pack to save, test/fixtures/container-pack for the replicas), and free
// loopback ports. haproxy:3.0 here is a local stand-in (Debian's haproxy 2.6), see setup.ts.
import { chmodSync, cpSync, mkdtempSync, readFileSync, renameSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest'
import { docker, dockerOk, freePort, http, invokeBody, logLines, ROOT, sleep, until, type Answer } from './engine.js'
import { invokeHead, rawExchange } from '../helpers/raw-exchange.js'

const engine = inject('engine')
const PROJECT = `kph-ct-${process.pid}`
const TOKEN = readFileSync(join(ROOT, 'docker/dev-token'), 'utf8').trim()
/** Each call's bound: the rehearsal's promise is a 200 within this. */
const CALL_MS = 1000

const work = mkdtempSync(join(tmpdir(), 'kph-compose-'))
chmodSync(work, 0o755)
const devPack = join(work, 'dev-pack')
let env: NodeJS.ProcessEnv = process.env
let hostUrl = ''
let lbUrl = ''

const compose = (args: string[], timeoutMs = 120_000) =>
  docker(['compose', '-p', PROJECT, '-f', join(ROOT, 'compose.yaml'), '-f', join(work, 'override.yaml'), '--profile', 'scale', ...args], { timeoutMs, env })
async function composeOk(args: string[], timeoutMs?: number): Promise<string> {
  const ran = await compose(args, timeoutMs)
  if (ran.code !== 0) throw new Error(`docker compose ${args.join(' ')} exited ${ran.code}:\n${ran.stdout}\n${ran.stderr.slice(-4000)}`)
  return ran.stdout
}
const containers = async (service: string) =>
  (await composeOk(['ps', '-a', '-q', service]))
    .trim()
    .split('\n')
    .filter((l) => l !== '')

beforeAll(async () => {
  if (engine.skip !== undefined) return
  cpSync(join(ROOT, 'examples/hello-pack'), devPack, { recursive: true })
  writeFileSync(
    join(work, 'override.yaml'),
    [
      'services:',
      '  pack-host:',
      '    volumes:',
      `      - ${devPack}:/app/pack:ro`,
      '  replica:',
      '    volumes:',
      `      - ${join(ROOT, 'test/fixtures/container-pack')}:/app/pack:ro`,
      '',
    ].join('\n'),
  )
  const [hostPort, lbPort] = [await freePort(), await freePort()]
  env = { ...process.env, PACK_HOST_PORT: String(hostPort), PACK_LB_PORT: String(lbPort), DOCKER_BUILDKIT: '1' }
  hostUrl = `http://127.0.0.1:${hostPort}`
  lbUrl = `http://127.0.0.1:${lbPort}`
  const t0 = performance.now()
  await composeOk(['up', '--build', '-d', '--wait'], 180_000)
  console.log(`container tests: docker compose --profile scale up --wait: ${((performance.now() - t0) / 1000).toFixed(1)} s (healthy replicas behind HAProxy)`)
})

afterAll(async () => {
  if (engine.skip === undefined) await compose(['down', '--timeout', '15'], 120_000)
  rmSync(work, { recursive: true, force: true })
})

const invoke = (url: string, tool: string, input: unknown, id: string, timeoutMs = 10_000) =>
  http(`${url}/v1/invoke`, {
    method: 'POST',
    timeoutMs,
    headers: { 'kindgi-pack-token': TOKEN, 'content-type': 'application/json', 'x-call-id': id },
    body: invokeBody(tool, input, id),
  })
const info = async () => (await http(`${hostUrl}/v1/info`, { headers: { 'kindgi-pack-token': TOKEN } })).body as { artifactVersion: string; packId: string }

/** An editor's save: the new bytes to a temporary file, renamed over the index. */
function saveIndex(text: string): void {
  const tmp = join(devPack, '.index.json.swp')
  writeFileSync(tmp, text)
  chmodSync(tmp, 0o644)
  renameSync(tmp, join(devPack, 'index.json'))
}

describe.skipIf(engine.skip !== undefined)('docker compose up: the dev service', () => {
  it('serves examples/hello-pack with the dev token', async () => {
    expect((await http(`${hostUrl}/readyz`)).body).toEqual({ status: 'ready' })
    expect((await info()).packId).toBe('hello')
    expect((await invoke(hostUrl, 'hello.greet', { name: 'Ana' }, 'dev-1')).body).toEqual({ v: 2, kind: 'result', output: { greeting: 'Hello, Ana!' } })
  })

  it('--watch: a save of the index is seen inside the container and the new pack served', async () => {
    const index = JSON.parse(readFileSync(join(devPack, 'index.json'), 'utf8')) as { artifactVersion: string }
    index.artifactVersion = 'container-test.2'
    saveIndex(`${JSON.stringify(index, null, 2)}\n`)
    // The stat poll runs every second under strict; the new pool boots beside the old one.
    await until('the new artifactVersion', async () => ((await info()).artifactVersion === 'container-test.2' ? true : undefined), 20_000, 200)
    const [id] = await containers('pack-host')
    expect((await logLines(id!)).filter((l) => l.kind === 'reloaded').map((l) => l.artifactVersion)).toEqual(['container-test.2'])
    expect((await invoke(hostUrl, 'hello.greet', { name: 'Bo' }, 'dev-2')).body.output).toEqual({ greeting: 'Hello, Bo!' })
  })

  it('--watch: a broken index is reported and the old pack keeps serving', async () => {
    saveIndex('{ "v": 1, "packId": ')
    const [id] = await containers('pack-host')
    const failed = await until('a boot-failed line', async () => (await logLines(id!)).find((l) => l.kind === 'boot-failed'), 20_000, 200)
    expect(failed).toMatchObject({ reload: true })
    expect((await info()).artifactVersion).toBe('container-test.2')
    expect((await invoke(hostUrl, 'hello.greet', { name: 'Cy' }, 'dev-3')).body.output).toEqual({ greeting: 'Hello, Cy!' })
    expect((await dockerOk(['inspect', '--format', '{{.State.Running}}', id!])).trim()).toBe('true')
  })
})

type Sent = Answer & { id: string; phase: string }
type Phase = { name: string; sent: Sent[] }

/**
 * Fast calls through the balancer from `lanes` callers, one after another each, until `stop`
 * resolves, `maxCalls` are sent or `maxMs` passed: every loop is bounded in count and time.
 */
async function drive(phase: string, opts: { lanes: number; maxCalls: number; maxMs: number; stop?: Promise<unknown> }): Promise<Phase> {
  const sent: Sent[] = []
  let stopped = false
  void opts.stop?.then(() => (stopped = true))
  const deadline = Date.now() + opts.maxMs
  let n = 0
  const lane = async () => {
    while (!stopped && n < opts.maxCalls && Date.now() < deadline) {
      const id = `${phase}-${n++}`
      const answer = await invoke(lbUrl, 'echo', { id }, id, 5_000)
      sent.push({ ...answer, id, phase })
    }
  }
  await Promise.all(Array.from({ length: opts.lanes }, lane))
  return { name: phase, sent }
}

const failed = (p: Phase) => p.sent.filter((s) => s.status !== 200 || s.body?.output?.id !== s.id || s.ms > CALL_MS)
const slowest = (p: Phase) => Math.max(0, ...p.sent.map((s) => s.ms))

describe.skipIf(engine.skip !== undefined)('docker compose --profile scale up: three replicas behind HAProxy', () => {
  const phases: Phase[] = []
  const slowCalls: Sent[] = []
  let replicas: string[] = []

  beforeAll(async () => {
    replicas = await containers('replica')
  })

  it('has three healthy replicas and answers through the balancer', async () => {
    expect(replicas).toHaveLength(3)
    for (const id of replicas) expect((await dockerOk(['inspect', '--format', '{{.State.Health.Status}}', id])).trim()).toBe('healthy')
    const phase = await drive('steady', { lanes: 2, maxCalls: 30, maxMs: 15_000 })
    phases.push(phase)
    expect(failed(phase)).toEqual([])
  })

  it('a body over 10 MiB through the balancer reads its 413, and takes no replica out', async () => {
    // Written whole before anything is read: before, the replica closed with the body unread
    // and HAProxy cut the client off (EPIPE).
    const big = Buffer.alloc(24 * 1024 * 1024, 0x20)
    for (let i = 0; i < 3; i++) {
      const got = await rawExchange(Number(new URL(lbUrl).port), invokeHead(big.length, TOKEN), big, /\}$/)
      expect(got.error).toBeUndefined()
      expect(got.text).toMatch(/^HTTP\/1\.1 413 [\s\S]*\{"error":"Request body too large"\}$/)
    }
    // And as a runtime sends it, with fetch.
    const res = await fetch(`${lbUrl}/v1/invoke`, { method: 'POST', headers: { 'kindgi-pack-token': TOKEN, 'content-type': 'application/json' }, body: big })
    expect([res.status, await res.json()]).toEqual([413, { error: 'Request body too large' }])
    const phase = await drive('after-413', { lanes: 2, maxCalls: 12, maxMs: 15_000 })
    phases.push(phase)
    expect(failed(phase)).toEqual([])
    const [lb] = await containers('lb')
    expect((await docker(['logs', lb!])).stdout).not.toMatch(/is DOWN/)
  })

  it('a replica drains (docker stop, a call in flight on it): every call answers 200 within a second', async () => {
    // Three slow calls, nothing else in between: round robin puts one on each replica.
    const slow = [0, 1, 2].map((i) =>
      invoke(lbUrl, 'slow-echo', { id: `slow-${i}`, ms: 4000 }, `slow-${i}`, 15_000).then((a) => ({ ...a, id: `slow-${i}`, phase: 'drain' })),
    )
    await sleep(1_000) // each on its replica, with time to spare, before the stop

    const stopping = dockerOk(['stop', replicas[0]!], { timeoutMs: 30_000 })
    const phase = await drive('drain', { lanes: 2, maxCalls: 200, maxMs: 15_000, stop: stopping })
    phases.push(phase)
    slowCalls.push(...(await Promise.all(slow)))
    await stopping
    expect(slowCalls.map((s) => [s.status, s.body?.output?.id])).toEqual([0, 1, 2].map((i) => [200, `slow-${i}`]))
    expect(failed(phase)).toEqual([])
    expect((await dockerOk(['inspect', '--format', '{{.State.ExitCode}}', replicas[0]!])).trim()).toBe('0')
    // The drained replica had one of the slow calls, and finished it.
    const ran = (await logLines(replicas[0]!)).filter((l) => l.kind === 'call').map((l) => l.runId)
    expect(ran.filter((r) => String(r).startsWith('slow-'))).toHaveLength(1)
  })

  it('while that replica is gone: every call answers 200 within a second', async () => {
    const phase = await drive('gone', { lanes: 2, maxCalls: 30, maxMs: 15_000 })
    phases.push(phase)
    expect(failed(phase)).toEqual([])
  })

  it('right after another is killed outright (SIGKILL): every call answers 200 within a second', async () => {
    // Nothing in flight at the kill, and its call lines written (they flush every 50 ms).
    await sleep(300)
    await dockerOk(['kill', '--signal', 'KILL', replicas[1]!])
    const phase = await drive('killed', { lanes: 2, maxCalls: 30, maxMs: 15_000 })
    phases.push(phase)
    expect(failed(phase)).toEqual([])
  })

  it('no call was lost or ran twice: every call sent ran exactly once, on one replica', async () => {
    const ran = new Map<string, number>()
    for (const id of replicas) for (const l of await logLines(id)) if (l.kind === 'call') ran.set(String(l.runId), (ran.get(String(l.runId)) ?? 0) + 1)
    const every = [...phases.flatMap((p) => p.sent), ...slowCalls]
    expect(every.filter((s) => ran.get(s.id) !== 1).map((s) => `${s.id} ran ${ran.get(s.id) ?? 0} times`)).toEqual([])
    const [lb] = await containers('lb')
    const lbLog = (await docker(['logs', lb!])).stdout
    const retried = new Map<string, string>()
    for (const m of lbLog.matchAll(/^lb-call id=(\S+) server=(\S+) status=(\d+) retries=(\+?\d+) ms=(\d+)/gm))
      if (m[4] !== '0') retried.set(m[1]!, `${m[4]} to ${m[2]}`)
    for (const p of phases) {
      const r = p.sent.filter((s) => retried.has(s.id)).length
      console.log(
        `container tests: rehearsal ${p.name.padEnd(7)} sent ${String(p.sent.length).padStart(3)}, failed ${failed(p).length}, slowest ${slowest(p).toFixed(0)} ms, sent again by HAProxy ${r}`,
      )
    }
    console.log(
      `container tests: rehearsal slow calls (4 s each, one on the drained replica): ${slowCalls.map((s) => `${s.status} in ${s.ms.toFixed(0)} ms`).join(', ')}`,
    )
  })
})
