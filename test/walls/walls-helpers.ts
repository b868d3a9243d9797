// What the wall tests share: raw HTTP on fresh connections (an attack may answer one itself),
// the host's process tree from /proc (to kill all of it, to measure its CPU, to find the
// processes that run pack code), and a wrapper that starts a host and always stops it.
import { mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { dirname, join } from 'node:path'
import { createServer, request as httpRequest, type RequestListener } from 'node:http'
import { connect, type AddressInfo } from 'node:net'
import { afterAll, beforeAll, expect, onTestFinished } from 'vitest'
import { processTree } from '../../bench/process-tree.js'
import { PACK_PROCESS_MARKER } from '../../src/pool/strict-flags.js'
import { BIN, cmdline, FIXTURES, landlockOf, spawnerOf, spawnHost, sleep, TOKEN, type Host, type SpawnOptions } from '../helpers/host.js'

export { processTree }
export { cmdline, landlockOf, spawnerOf }

/** The pids of the host's processes that run pack code, now. */
export function packProcesses(host: Host): number[] {
  return processTree(host.proc.pid as number).filter((pid) => cmdline(pid).includes(PACK_PROCESS_MARKER))
}

export const WALLS_INDEX = `${FIXTURES}/walls-pack/index.json`
export const STRICT = { KINDGI_PACK_SANDBOX: 'strict' }

/** Under root, the host runs with no capability: subject to file modes, as the image's user is. */
export const NO_CAPABILITIES = process.getuid?.() === 0 ? ['setpriv', '--bounding-set=-all', '--inh-caps=-all', '--', process.execPath, BIN] : undefined

export type RawAnswer = { status: number; text: string; body: any; headers: Record<string, unknown> } | { error: string }

/** A fresh folder outside anything the service may write, removed when the calling test ends. */
export function scratchDir(prefix: string): string {
  const dir = mkdtempSync(join(tmpdir(), `kph-walls-${prefix}-`))
  onTestFinished(() => rmSync(dir, { recursive: true, force: true }))
  return dir
}

/** One HTTP request on a connection of its own (no keep-alive pool), bounded by timeoutMs. */
export function rawHttp(
  port: number,
  options: { method?: string; path: string; headers?: Record<string, string>; body?: unknown; timeoutMs?: number },
): Promise<RawAnswer> {
  const body = options.body === undefined ? undefined : typeof options.body === 'string' ? options.body : JSON.stringify(options.body)
  return new Promise((resolve) => {
    const req = httpRequest(
      {
        host: '127.0.0.1',
        port,
        method: options.method ?? (body === undefined ? 'GET' : 'POST'),
        path: options.path,
        agent: false,
        headers: { connection: 'close', ...(body !== undefined ? { 'content-type': 'application/json' } : {}), ...options.headers },
      },
      (res) => {
        let text = ''
        res.setEncoding('utf8')
        res.on('data', (d: string) => (text += d))
        res.on('end', () => {
          let parsed: unknown = text
          try {
            parsed = JSON.parse(text)
          } catch {
            // keep the text
          }
          resolve({ status: res.statusCode ?? 0, text, body: parsed, headers: res.headers })
        })
        res.on('error', (err) => resolve({ error: err.message }))
      },
    )
    req.setTimeout(options.timeoutMs ?? 10_000, () => req.destroy(new Error('timed out')))
    req.on('error', (err) => resolve({ error: err.message }))
    req.end(body)
  })
}

/** An invoke on a fresh connection. */
export function rawInvoke(
  port: number,
  tool: string,
  input: unknown,
  ctx: Record<string, unknown> = { tenantId: 'tenant-a', runId: 'run-1' },
  timeoutMs = 10_000,
): Promise<RawAnswer> {
  return rawHttp(port, {
    path: '/v1/invoke',
    headers: { 'kindgi-pack-token': TOKEN, 'kindgi-timeout-ms': String(timeoutMs) },
    body: { v: 2, kind: 'invoke', tool: { id: tool }, input, ctx },
    timeoutMs: timeoutMs + 5_000,
  })
}

export function healthz(port: number): Promise<RawAnswer> {
  return rawHttp(port, { path: '/healthz', timeoutMs: 3_000 })
}

/** Whether something accepts TCP connections on the port (within 1 s). */
export function listens(port: number): Promise<boolean> {
  return new Promise((resolve) => {
    const socket = connect(port, '127.0.0.1')
    const done = (ok: boolean) => {
      socket.destroy()
      resolve(ok)
    }
    socket.setTimeout(1_000, () => done(false))
    socket.once('connect', () => done(true))
    socket.once('error', () => done(false))
  })
}

/** The body of a 200 answer the host itself wrote: it carries the host's own header. */
export function answeredByHost(answer: RawAnswer): boolean {
  return !('error' in answer) && answer.status === 200 && answer.headers['kindgi-artifact-version'] !== undefined
}

type Stat = { pid: number; ppid: number; cpuTicks: number }

function stat(pid: number): Stat | undefined {
  try {
    const raw = readFileSync(`/proc/${pid}/stat`, 'utf8')
    // Fields after the command (which may hold spaces) in parentheses: state ppid … utime(14) stime(15).
    const rest = raw.slice(raw.lastIndexOf(')') + 2).split(' ')
    return { pid, ppid: Number(rest[1]), cpuTicks: Number(rest[11]) + Number(rest[12]) }
  } catch {
    return undefined
  }
}

/** The pid of a process's parent (the front, for the spawner), if it still runs. */
export function parentOf(pid: number): number | undefined {
  return stat(pid)?.ppid
}

/** CPU time (user + system) of one process, not its children's, in ms (clock ticks are 10 ms on Linux). */
export function cpuMsOf(pid: number): number {
  return (stat(pid)?.cpuTicks ?? 0) * 10
}

/** CPU time (user + system) of the process tree, in ms (clock ticks are 10 ms on Linux). */
export function treeCpuMs(root: number): number {
  return processTree(root).reduce((ms, pid) => ms + (stat(pid)?.cpuTicks ?? 0) * 10, 0)
}

/** Whether a process with this pid exists (signal 0). */
export function alive(pid: number): boolean {
  try {
    process.kill(pid, 0)
    return true
  } catch {
    return false
  }
}

/** The strict launcher's folder for ctx.tmpDir (from the served process's environment), if any. */
function tmpRootOf(pid: number): string | undefined {
  try {
    const line = readFileSync(`/proc/${pid}/environ`, 'utf8')
      .split('\0')
      .find((l) => l.startsWith('KINDGI_PACK_HOST_TMP_ROOT='))
    const dir = line?.slice('KINDGI_PACK_HOST_TMP_ROOT='.length)
    return dir?.startsWith(join(tmpdir(), 'kindgi-pack-host-')) ? dir : undefined
  } catch {
    return undefined
  }
}

/**
 * Stops a host and everything it started: SIGTERM to the host, then SIGKILL to whatever of
 * its tree (taken before, so orphans of a killed launcher are included) is still alive after
 * 3 s, and removes the host's tmp folders should a SIGKILL have left them. Only pids
 * of this host's own tree are signalled.
 */
export async function stopTree(host: Host | undefined): Promise<void> {
  const pid = host?.proc.pid
  if (host === undefined || pid === undefined) return
  const tree = processTree(pid)
  const tmpRoots = tree.map(tmpRootOf).filter((d): d is string => d !== undefined)
  await Promise.race([host.stop(), sleep(3_000)])
  for (const p of tree) if (alive(p)) process.kill(p, 'SIGKILL')
  // The folder a non-strict service makes for strict calls (call-tmp.ts) is named after its pid.
  const own = readdirSync(tmpdir()).filter((name) => [pid, ...tree].some((p) => name.startsWith(`kindgi-pack-host-${p}-`)))
  for (const dir of [...tmpRoots, ...own.map((name) => join(tmpdir(), name))]) rmSync(dir, { recursive: true, force: true })
}

/**
 * What starts a host on the walls pack cut down to `tools` and `echo` (stillServes calls it),
 * removed when the calling test ends. A host of the whole pack takes seconds more to start;
 * raised to context-isolated, a process per tool, it took longer than the listening wait on a
 * loaded machine.
 */
export function wallsPackWith(tools: readonly string[]): Pick<SpawnOptions, 'args'> {
  const wanted = new Set([...tools, 'echo'])
  const index = JSON.parse(readFileSync(WALLS_INDEX, 'utf8')) as { tools: Array<{ id: string }> }
  index.tools = index.tools.filter((tool) => wanted.has(tool.id))
  if (index.tools.length !== wanted.size) throw new Error(`not all of ${[...wanted].join(', ')} are walls-pack tools`)
  const file = join(scratchDir('index'), 'index.json')
  writeFileSync(file, JSON.stringify(index))
  return { args: ['--index', file, '--module-root', dirname(WALLS_INDEX), '--host', '127.0.0.1'] }
}

/** A host for a describe: started before its tests, its whole tree killed after. */
export function wallsHost(options: SpawnOptions = {}): Host {
  const shared = {} as Host
  beforeAll(async () => {
    Object.assign(shared, await spawnHost({ index: WALLS_INDEX, ...options }))
  })
  afterAll(async () => {
    await stopTree(shared.proc === undefined ? undefined : shared)
  })
  return shared
}

/** Starts a host for one test; `use` gets it, and its tree is killed whatever happens. */
export async function withHost<T>(options: SpawnOptions, use: (host: Host) => Promise<T>): Promise<T> {
  const host = await spawnHost({ index: WALLS_INDEX, ...options })
  try {
    return await use(host)
  } finally {
    await stopTree(host)
  }
}

/** The service still serves: /healthz answers, the port listens, a plain call answers right. */
export async function stillServes(host: Host): Promise<void> {
  expect.soft(await healthz(host.port), '/healthz after the attack').toMatchObject({ status: 200, body: { status: 'ok' } })
  expect.soft(await listens(host.port), 'the port still listens').toBe(true)
  const echo = await rawInvoke(host.port, 'echo', { after: 'attack' }, { tenantId: 'tenant-c', runId: 'r' })
  expect
    .soft('error' in echo ? echo : echo.body, 'a plain call after the attack')
    .toEqual({ v: 2, kind: 'result', output: { input: { after: 'attack' }, tenantId: 'tenant-c' } })
}

/** A process's resident memory now, in MB; 0 once it is gone. */
export function rssMB(pid: number | undefined): number {
  if (pid === undefined) return 0
  try {
    return Number(/VmRSS:\s+(\d+)/.exec(readFileSync(`/proc/${pid}/status`, 'utf8'))?.[1] ?? 0) / 1024
  } catch {
    return 0
  }
}

/** The highest resident memory the host's spawner has had, in MB (/proc/<pid>/status VmHWM). */
export function spawnerPeakMB(host: Host): number {
  const spawner = spawnerOf(host)
  expect(spawner, 'the spawner').toBeDefined()
  const kb = /^VmHWM:\s+(\d+) kB/m.exec(readFileSync(`/proc/${spawner}/status`, 'utf8'))?.[1]
  return Number(kb) / 1024
}

/** The peak resident memory (MB) of the front and the spawner, sampled while `during` runs. */
export async function peaks<T>(host: Host, during: () => Promise<T>): Promise<{ result: T; front: number; spawner: number }> {
  let front = 0
  let spawner = 0
  const timer = setInterval(() => {
    front = Math.max(front, rssMB(host.proc.pid))
    spawner = Math.max(spawner, rssMB(spawnerOf(host)))
  }, 20)
  try {
    return { result: await during(), front, spawner }
  } finally {
    clearInterval(timer)
  }
}

/**
 * Under strict, `tool` writes one line on its channel (fd 3) while tenant b's echo runs
 * `afterMs` later: the echo answers right within 2 s, and neither the front nor the
 * spawner passes 512 MB (stop 29: lines that are cheap to write and dear to parse).
 */
export async function channelLineBesideEcho(tool: string, afterMs: number): Promise<void> {
  await withHost({ env: STRICT }, async (host) => {
    await rawInvoke(host.port, 'echo', { warm: 1 })
    const { result, front, spawner } = await peaks(host, async () => {
      const attack = rawInvoke(host.port, tool, { ms: 4000, lines: 1 }, { tenantId: 'tenant-a', runId: 'attack' }, 20_000)
      await sleep(afterMs)
      const started = performance.now()
      const victim = await rawInvoke(host.port, 'echo', { victim: 1 }, { tenantId: 'tenant-b', runId: 'victim' }, 3_000)
      const victimMs = performance.now() - started
      await attack
      return { victim, victimMs }
    })
    console.log(`${tool}: victim ${Math.round(result.victimMs)} ms, front peak ${Math.round(front)} MB, spawner peak ${Math.round(spawner)} MB`)
    expect
      .soft('error' in result.victim ? result.victim : result.victim.body, "tenant b's echo (3 s deadline)")
      .toEqual({ v: 2, kind: 'result', output: { input: { victim: 1 }, tenantId: 'tenant-b' } })
    // Unwalled, seconds, past its 3 s deadline; walled, ms on a quiet machine: 2 s leaves a loaded one room.
    expect.soft(result.victimMs, "tenant b's echo, ms").toBeLessThan(2_000)
    expect.soft(front, 'front peak RSS, MB').toBeLessThan(512)
    expect.soft(spawner, 'spawner peak RSS, MB').toBeLessThan(512)
    await stillServes(host)
  })
}

/** A file store on loopback for the calling test, answering as `handle` does; stopped when the test ends. Its url. */
export async function fileStoreOn(handle: RequestListener): Promise<string> {
  const store = createServer(handle)
  await new Promise<void>((resolve) => store.listen(0, '127.0.0.1', resolve))
  onTestFinished(() => {
    store.closeAllConnections()
    store.close()
  })
  return `http://127.0.0.1:${(store.address() as AddressInfo).port}/files`
}

/** Front and spawner CPU (ms) while `tool` runs under strict, with tenant b's echo answered in time meanwhile. */
export async function frontAndSpawnerCpu(host: Host, tool: string, input: object, ctx: object): Promise<{ spent: number; answer: RawAnswer }> {
  const spawner = spawnerOf(host) as number
  expect(spawner, 'the spawner').toBeDefined()
  const front = parentOf(spawner) as number
  const before = cpuMsOf(front) + cpuMsOf(spawner)
  const attack = rawInvoke(host.port, tool, input, { tenantId: 'tenant-a', runId: 'attack', ...ctx }, 20_000)
  await sleep(1_000)
  const started = Date.now()
  const victim = await rawInvoke(host.port, 'echo', { message: 'hello' }, { tenantId: 'tenant-b', runId: 'victim' })
  expect.soft('error' in victim ? victim : victim.body, "the victim's answer").toMatchObject({ kind: 'result' })
  expect.soft(Date.now() - started, "ms until the victim's answer").toBeLessThan(3_000)
  const answer = await attack
  return { spent: cpuMsOf(front) + cpuMsOf(spawner) - before, answer }
}

/** A file store for the calling test whose every read answers a file of just under 10 MiB (the most a read may carry). Its url. */
export function bigFileStore(): Promise<string> {
  return fileStoreServing(Buffer.alloc(10 * 1024 * 1024 - 16, 7))
}

/** A file store for the calling test whose every read answers `file`. Its url. */
export function fileStoreServing(file: Buffer): Promise<string> {
  return fileStoreOn((req, res) => {
    req.resume()
    req.on('end', () => {
      res.writeHead(200, { 'content-type': 'application/octet-stream' })
      res.end(file)
    })
  })
}
