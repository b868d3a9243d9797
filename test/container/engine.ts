// What the container tests share: the engine they found (or why there is none), the docker
// client, and small helpers to run it. No test here starts anything the engine does not run:
// every call to a container goes through a published loopback port or `docker exec`.
import { spawn } from 'node:child_process'
import { existsSync } from 'node:fs'
import { createServer } from 'node:net'
import { fileURLToPath } from 'node:url'

export const ROOT = fileURLToPath(new URL('../..', import.meta.url))
/** Beside the repo (X/../shared), on these machines and in CI: it starts an engine and builds stand-ins. */
export const ENGINE_SCRIPT = `${ROOT}../shared/tools/container-engine.sh`
/** The image every container test runs: docker/Dockerfile, built once by the global setup. */
export const IMAGE = 'kindgi-pack-host:container-test'
/** Debian's client, which container-engine.sh installs; another `docker` may sit earlier on PATH. */
export const DOCKER = process.env.DOCKER ?? (existsSync('/usr/bin/docker') ? '/usr/bin/docker' : 'docker')

export type Engine = {
  /** Why the container tests cannot run here, or undefined when they can. */
  skip: string | undefined
  /** "image: what it is" for every base image the files name, stand-ins said so. */
  images: string[]
  imageBytes: number
  buildSeconds: number
  /** What NODE_IMAGE the Node 26 build gets (see setup.ts), or undefined when none can run node. */
  node26Image: string | undefined
}

declare module 'vitest' {
  export interface ProvidedContext {
    engine: Engine
  }
}

export type Ran = { code: number | null; stdout: string; stderr: string }

/** Runs a command to its end (bounded by timeoutMs); never throws for a non-zero exit. */
export function run(cmd: string, args: string[], options: { timeoutMs?: number; input?: string; env?: NodeJS.ProcessEnv; cwd?: string } = {}): Promise<Ran> {
  return new Promise((resolve) => {
    const child = spawn(cmd, args, { cwd: options.cwd ?? ROOT, env: options.env ?? process.env, stdio: ['pipe', 'pipe', 'pipe'] })
    let stdout = ''
    let stderr = ''
    child.stdout.on('data', (d: Buffer) => (stdout += d.toString()))
    child.stderr.on('data', (d: Buffer) => (stderr += d.toString()))
    const timer = setTimeout(() => child.kill('SIGKILL'), options.timeoutMs ?? 120_000)
    child.once('error', (err) => {
      clearTimeout(timer)
      resolve({ code: null, stdout, stderr: stderr + String(err) })
    })
    child.once('close', (code) => {
      clearTimeout(timer)
      resolve({ code, stdout, stderr })
    })
    // A command that exits before reading its input (most docker calls) closes the pipe first: not an error.
    child.stdin.on('error', () => undefined)
    child.stdin.end(options.input ?? '')
  })
}

export function docker(args: string[], options: { timeoutMs?: number; input?: string; env?: NodeJS.ProcessEnv } = {}): Promise<Ran> {
  return run(DOCKER, args, options)
}

/** Like docker(), but a non-zero exit is an error carrying the command's output. */
export async function dockerOk(args: string[], options: { timeoutMs?: number; input?: string; env?: NodeJS.ProcessEnv } = {}): Promise<string> {
  const ran = await docker(args, options)
  if (ran.code !== 0) throw new Error(`docker ${args.join(' ')} exited ${ran.code}:\n${ran.stdout}\n${ran.stderr}`)
  return ran.stdout
}

export function freePort(): Promise<number> {
  return new Promise((resolve) => {
    const server = createServer().listen(0, '127.0.0.1', () => {
      const { port } = server.address() as { port: number }
      server.close(() => resolve(port))
    })
  })
}

export const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms))

/** Polls `check` every `everyMs` until it returns a value other than undefined, or throws at the deadline. */
export async function until<T>(what: string, check: () => Promise<T | undefined>, timeoutMs: number, everyMs = 100): Promise<T> {
  const deadline = Date.now() + timeoutMs
  for (;;) {
    const value = await check().catch(() => undefined)
    if (value !== undefined) return value
    if (Date.now() > deadline) throw new Error(`${what}: not within ${timeoutMs} ms`)
    await sleep(everyMs)
  }
}

export type JsonLine = { kind?: string; [field: string]: unknown }

/** The JSON lines of a container's log (the host logs on stderr); other lines are dropped. */
export async function logLines(container: string): Promise<JsonLine[]> {
  const ran = await docker(['logs', container])
  return `${ran.stdout}\n${ran.stderr}`
    .split('\n')
    .filter((l) => l.startsWith('{'))
    .flatMap((l) => {
      try {
        return [JSON.parse(l) as JsonLine]
      } catch {
        return []
      }
    })
}

export type Answer = { status: number; body: any; ms: number; text: string }

/** One HTTP exchange with fetch, bounded; a failure to connect is status 0 with the error as text. */
export async function http(url: string, init: RequestInit & { timeoutMs?: number } = {}): Promise<Answer> {
  const started = performance.now()
  try {
    const res = await fetch(url, { ...init, signal: AbortSignal.timeout(init.timeoutMs ?? 10_000) })
    const text = await res.text()
    let body: unknown = text
    try {
      body = JSON.parse(text)
    } catch {
      // not JSON (a balancer's page): keep the text
    }
    return { status: res.status, body, text, ms: performance.now() - started }
  } catch (err) {
    return { status: 0, body: undefined, text: String((err as Error).cause ?? err), ms: performance.now() - started }
  }
}

export function invokeBody(tool: string, input: unknown, runId: string): string {
  return JSON.stringify({ v: 2, kind: 'invoke', tool: { id: tool }, input, ctx: { tenantId: 't1', runId } })
}
