// Spawns the built kindgi-pack-host as a real process on loopback and talks HTTP to it,
// so end-to-end tests exercise exactly what an operator runs.
import { spawn, type ChildProcess } from 'node:child_process'
import { readFileSync } from 'node:fs'
import { request as httpRequest } from 'node:http'
import { fileURLToPath } from 'node:url'
import { afterAll, beforeAll } from 'vitest'
import { processTree } from '../../bench/process-tree.js'
import { type Landlock, probeLandlock } from '../../src/pool/landlock.js'

export const ROOT = fileURLToPath(new URL('../..', import.meta.url))
export const BIN = `${ROOT}dist/src/main.js`
export const FIXTURES = `${ROOT}test/fixtures`
export const BASIC_INDEX = `${FIXTURES}/basic-pack/index.json`
export const TOKEN = 'test-token-0123456789'

export type LogLine = { kind?: string; [field: string]: unknown }

export type Host = {
  proc: ChildProcess
  port: number
  url: string
  lines: LogLine[]
  stdout(): string
  waitFor(kind: string, match?: (line: LogLine) => boolean, timeoutMs?: number): Promise<LogLine>
  exited: Promise<number | null>
  stop(signal?: NodeJS.Signals): Promise<number | null>
}

export type SpawnOptions = {
  index?: string
  args?: string[]
  env?: Record<string, string | undefined>
  /** Wait for `listening` (default) or return as soon as the process is up. */
  waitListening?: boolean
  /** What starts the host (default: this Node running the built main.js), and where. */
  command?: string[]
  cwd?: string
  /** Descriptors past its stdio, from fd 3 on: 'ignore' leaves one closed, a number passes this process's descriptor on. */
  moreFds?: Array<'ignore' | number>
}

/** The environment a test host starts from: this process's, without any KINDGI_* setting. */
export function baseEnv(): Record<string, string> {
  const env: Record<string, string> = {}
  for (const [k, v] of Object.entries(process.env)) if (v !== undefined && !k.startsWith('KINDGI_') && k !== 'NODE_OPTIONS') env[k] = v
  return env
}

const live = new Set<ChildProcess>()
process.on('exit', () => {
  for (const p of live) p.kill('SIGKILL')
})

export function spawnHost(options: SpawnOptions = {}): Promise<Host> {
  const env: Record<string, string> = { ...baseEnv(), PORT: '0', KINDGI_PACK_SERVICE_TOKEN: TOKEN, FIXTURE_REQUIRED: 'set' }
  for (const [k, v] of Object.entries(options.env ?? {})) {
    if (v === undefined) delete env[k]
    else env[k] = v
  }
  const args = options.args ?? ['--index', options.index ?? BASIC_INDEX, '--host', '127.0.0.1']
  const [command, ...prefix] = options.command ?? [process.execPath, BIN]
  const proc = spawn(command!, [...prefix, ...args], { env, stdio: ['ignore', 'pipe', 'pipe', ...(options.moreFds ?? [])], cwd: options.cwd })
  live.add(proc)
  const lines: LogLine[] = []
  const waiters: Array<() => void> = []
  let out = ''
  let errBuf = ''
  proc.stdout!.on('data', (d: Buffer) => (out += d.toString()))
  proc.stderr!.on('data', (d: Buffer) => {
    errBuf += d.toString()
    for (let nl = errBuf.indexOf('\n'); nl !== -1; nl = errBuf.indexOf('\n')) {
      const raw = errBuf.slice(0, nl)
      errBuf = errBuf.slice(nl + 1)
      try {
        lines.push(JSON.parse(raw) as LogLine)
      } catch {
        lines.push({ kind: 'non-json', raw })
      }
      for (const w of waiters.splice(0)) w()
    }
  })
  // Known before the waiters look: a waiter for a line that never came then fails at once.
  let exitCode: number | null | undefined
  const exited = new Promise<number | null>((resolve) => {
    proc.once('exit', (code) => {
      live.delete(proc)
      exitCode = code
      for (const w of waiters.splice(0)) w()
      resolve(code)
    })
  })

  const waitFor: Host['waitFor'] = (kind, match = () => true, timeoutMs = 15_000) =>
    new Promise((resolve, reject) => {
      const deadline = setTimeout(() => reject(new Error(`no "${kind}" line within ${timeoutMs} ms; lines: ${JSON.stringify(lines)}`)), timeoutMs)
      const check = () => {
        const found = lines.find((l) => l.kind === kind && match(l))
        if (found !== undefined) {
          clearTimeout(deadline)
          resolve(found)
          return
        }
        if (exitCode !== undefined) {
          clearTimeout(deadline)
          reject(new Error(`process exited (${exitCode}) without a "${kind}" line; lines: ${JSON.stringify(lines)}`))
          return
        }
        waiters.push(check)
      }
      check()
    })

  const host: Host = {
    proc,
    port: 0,
    url: '',
    lines,
    stdout: () => out,
    waitFor,
    exited,
    async stop(signal = 'SIGTERM') {
      if (exitCode === undefined) proc.kill(signal)
      return exited
    },
  }
  if (options.waitListening === false) return Promise.resolve(host)
  return waitFor('listening').then((line) => {
    host.port = line.port as number
    host.url = `http://127.0.0.1:${host.port}`
    return host
  })
}

/**
 * One host for the tests of a file (or of the describe it is called in): started before
 * them, stopped after. The returned object is filled in once the host is listening.
 */
export function sharedHost(options: SpawnOptions = {}): Host {
  const shared = {} as Host
  beforeAll(async () => {
    Object.assign(shared, await spawnHost(options))
  })
  afterAll(async () => {
    await shared.stop?.()
  })
  return shared
}

export type Answer = { status: number; headers: Headers; body: any }

export async function request(host: Host, path: string, init: RequestInit & { token?: string | null } = {}): Promise<Answer> {
  const headers = new Headers(init.headers)
  if (init.token !== null) headers.set('kindgi-pack-token', init.token ?? TOKEN)
  const res = await fetch(`${host.url}${path}`, { ...init, headers })
  const text = await res.text()
  let body: unknown = text
  try {
    body = JSON.parse(text)
  } catch {
    // not JSON: keep the text for the assertion to show
  }
  return { status: res.status, headers: res.headers, body }
}

export function post(host: Host, message: unknown, headers: Record<string, string> = {}): Promise<Answer> {
  return request(host, '/v1/invoke', {
    method: 'POST',
    headers: { 'content-type': 'application/json', ...headers },
    body: typeof message === 'string' ? message : JSON.stringify(message),
  })
}

export const CTX = { tenantId: 'tenant-a', runId: 'run-1' }

export function invokeMessage(id: string, input: unknown = {}, extra: Record<string, unknown> = {}): Record<string, unknown> {
  return { v: 2, kind: 'invoke', tool: { id }, input, ctx: CTX, ...extra }
}

export function invoke(
  host: Host,
  id: string,
  input: unknown = {},
  headers: Record<string, string> = {},
  extra: Record<string, unknown> = {},
): Promise<Answer> {
  return post(host, invokeMessage(id, input, extra), headers)
}

export function checkInvoke(host: Host, id: string, config: unknown, trace: unknown = {}): Promise<Answer> {
  return post(host, { v: 2, kind: 'check-invoke', check: { id }, config, trace })
}

export const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms))

/** Whether `holds` came true within `ms`, looked at every 25 ms: for what happens soon after an answer, at a pace a loaded machine sets. */
export async function within(ms: number, holds: () => boolean): Promise<boolean> {
  const deadline = Date.now() + ms
  while (!holds()) {
    if (Date.now() > deadline) return false
    await sleep(25)
  }
  return true
}

/** Whether `read()` gives a non-empty value that then stays the same for `quietMs`, within `ms`. */
export async function settled(read: () => string, quietMs: number, ms: number): Promise<boolean> {
  const deadline = Date.now() + ms
  let last = read()
  let since = Date.now()
  while (Date.now() < deadline) {
    await sleep(50)
    const now = read()
    if (now !== last) {
      last = now
      since = Date.now()
    } else if (now !== '' && Date.now() - since >= quietMs) return true
  }
  return false
}

/**
 * Sends an invoke and goes away (closes its connection) without its answer: `leave` ms later,
 * or once `leave()` holds (for at most 10 s), so a test can leave a call known to be running.
 */
export async function invokeThenLeave(host: Host, message: unknown, leave: number | (() => boolean)): Promise<void> {
  const body = JSON.stringify(message)
  const req = httpRequest(`${host.url}/v1/invoke`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', 'kindgi-pack-token': TOKEN, 'content-length': Buffer.byteLength(body) },
  })
  req.on('error', () => undefined)
  req.end(body)
  if (typeof leave === 'number') await sleep(leave)
  else await within(10_000, leave)
  req.destroy()
}

/** A process's command line, its arguments joined by spaces; empty once it is gone. */
export function cmdline(pid: number): string {
  try {
    return readFileSync(`/proc/${pid}/cmdline`, 'utf8').split('\0').join(' ').trim()
  } catch {
    return ''
  }
}

/** The host's spawner, found among its processes by its command line; undefined before it starts. */
export function spawnerOf(host: Host): number | undefined {
  return processTree(host.proc.pid as number).find((pid) => cmdline(pid).includes('spawner-process'))
}

/**
 * This machine's Landlock wall, probed through the built helper, and whether its kernel cannot
 * have it (before Linux 6.12): the tests that stand on the kernel's walls then skip, saying so. A
 * machine whose kernel can must have the helper built (npm run build), or those tests fail.
 */
export function landlockOf(tests: string): { wall: Landlock; kernelLacksIt: boolean } {
  const wall = probeLandlock(`${ROOT}dist/workers/native/landlock-exec`)
  const kernelLacksIt = wall.kind === 'off' && /kernel/.test(wall.why)
  if (kernelLacksIt) console.log(`${tests} skipped: ${wall.kind === 'off' ? wall.why : ''}`)
  return { wall, kernelLacksIt }
}
