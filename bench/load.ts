// The benchmark's side of the load generator: autocannon runs in a process of its own
// (bench/load-child.ts), started once and sent one spec at a time, so its CPU is never
// counted as the server's and a run costs no process start.
import { fork, type ChildProcess } from 'node:child_process'
import { fileURLToPath } from 'node:url'
import { invokeBody } from './cases.js'
import { TOKEN } from './proc.js'

export type LoadSpec = {
  url: string
  token: string
  body: string
  connections: number
  /** Seconds of load before measuring (not recorded): JIT, pool growth, keep-alive sockets. */
  warmupS: number
  durationS: number
  /** A cheap call sent `barrierCalls` at once before measuring, until none is refused (see load-child). */
  barrierBody: string
  barrierCalls: number
  /** Requests per second from one caller, evenly spaced (bench/paced.ts); absent means as fast as answers come. */
  overallRate?: number
}

export type LoadResult = {
  /** 200 answers in the measured window. */
  requests: number
  non200: number
  errors: number
  timeouts: number
  elapsedS: number
  rps: number
  p50Us: number
  p90Us: number
  p99Us: number
  maxUs: number
  meanUs: number
}

/** The host's default cap on calls in flight: the barrier fills it. */
const CAP = 32
const BARRIER_BODY = invokeBody('echo', { message: 'barrier' })

export function loadSpec(url: string, body: string, connections: number, warmupS: number, durationS: number, overallRate?: number): LoadSpec {
  return { url, token: TOKEN, body, connections, warmupS, durationS, overallRate, barrierBody: BARRIER_BODY, barrierCalls: CAP }
}

export type ToLoad = { type: 'run'; id: number; spec: LoadSpec } | { type: 'exit' }
export type FromLoad =
  | { type: 'ready' }
  | { type: 'started'; id: number }
  | { type: 'done'; id: number; result: LoadResult }
  | { type: 'failed'; id: number; error: string }

/** NaN (no answers to take a percentile of) crosses IPC as null: make it NaN again. */
function revive(result: LoadResult): LoadResult {
  const out = { ...result } as Record<string, number | null>
  for (const [k, v] of Object.entries(out)) if (v === null) out[k] = Number.NaN
  return out as unknown as LoadResult
}

const CHILD = fileURLToPath(new URL('./load-child.js', import.meta.url))

export type LoadGenerator = {
  pid: number
  /** Runs one spec; `onMeasuring` fires when the warmup is over and the measured window starts. */
  run(spec: LoadSpec, onMeasuring?: () => void): Promise<LoadResult>
  close(): Promise<void>
}

export async function startLoadGenerator(): Promise<LoadGenerator> {
  const child: ChildProcess = fork(CHILD, [], { stdio: ['ignore', 'inherit', 'inherit', 'ipc'], execArgv: [] })
  await new Promise<void>((resolve, reject) => {
    child.once('message', () => resolve())
    child.once('exit', (code) => reject(new Error(`the load generator exited with ${code}`)))
  })
  let nextId = 1
  return {
    pid: child.pid as number,
    run(spec, onMeasuring) {
      const id = nextId++
      return new Promise((resolve, reject) => {
        const onMessage = (m: FromLoad) => {
          if (!('id' in m) || m.id !== id) return
          if (m.type === 'started') return onMeasuring?.()
          child.off('message', onMessage)
          if (m.type === 'done') resolve(revive(m.result))
          else reject(new Error(`load run failed: ${m.type === 'failed' ? m.error : 'unknown'}`))
        }
        child.on('message', onMessage)
        child.send({ type: 'run', id, spec } satisfies ToLoad)
      })
    },
    async close() {
      if (child.exitCode !== null) return
      const exited = new Promise((resolve) => child.once('exit', resolve))
      child.send({ type: 'exit' } satisfies ToLoad)
      await exited
    },
  }
}
