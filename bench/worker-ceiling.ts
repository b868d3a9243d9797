// The strict posture's ceiling on this machine: how many times a second a worker can be
// started with the pack's modules, used for one call and terminated, `parallel` at a time.
// Run as its own process: `node dist/bench/worker-ceiling.js '<CeilingSpec JSON>'`.
import { fileURLToPath } from 'node:url'
import { Worker } from 'node:worker_threads'
import { median } from './stats.js'

export type CeilingSpec = {
  /** Absolute paths of the pack modules the worker imports; the first one's default export is called. */
  modules: string[]
  input: unknown
  /** When present, the worker also compiles these with the host's Ajv (what the host's strict worker does). */
  schemas?: object[]
  parallel: number
  durationS: number
}

export type CeilingResult = { parallel: number; calls: number; elapsedS: number; rps: number; p50Ms: number }

const WORKER = fileURLToPath(new URL('./ceiling-worker.js', import.meta.url))

function once(spec: CeilingSpec): Promise<number> {
  const started = performance.now()
  const worker = new Worker(WORKER, { workerData: { modules: spec.modules, input: spec.input, schemas: spec.schemas } })
  return new Promise((resolve, reject) => {
    worker.once('message', () => {
      const ms = performance.now() - started
      void worker.terminate().then(() => resolve(ms))
    })
    worker.once('error', reject)
  })
}

export async function measureCeiling(spec: CeilingSpec): Promise<CeilingResult> {
  await once(spec) // warm the module cache of this process's loader
  const deadline = performance.now() + spec.durationS * 1000
  const times: number[] = []
  const t0 = performance.now()
  await Promise.all(
    Array.from({ length: spec.parallel }, async () => {
      while (performance.now() < deadline) times.push(await once(spec))
    }),
  )
  const elapsedS = (performance.now() - t0) / 1000
  return { parallel: spec.parallel, calls: times.length, elapsedS, rps: times.length / elapsedS, p50Ms: median(times) }
}

if (process.argv[1] === fileURLToPath(import.meta.url)) {
  const spec = JSON.parse(process.argv[2] as string) as CeilingSpec
  process.stdout.write(JSON.stringify(await measureCeiling(spec)) + '\n')
}
