// The strict posture's ceiling on this machine: how many times a second the isolation unit
// (a process under the strict flags the host uses) can be started, given the pack's modules,
// used for one call and killed, `parallel` at a time.
// Run as its own process: `node dist/bench/strict-ceiling.js '<CeilingSpec JSON>'`.
import { spawn } from 'node:child_process'
import { dirname } from 'node:path'
import { fileURLToPath } from 'node:url'
import { strictCommand } from '../src/pool/strict-flags.js'
import { median } from './stats.js'

export type CeilingSpec = {
  /** Absolute paths of the pack modules the worker imports; the first one's default export is called. */
  modules: string[]
  input: unknown
  /** When present, the process also compiles these with the host's Ajv. */
  schemas?: object[]
  parallel: number
  durationS: number
}

export type CeilingResult = { parallel: number; calls: number; elapsedS: number; rps: number; p50Ms: number }

// Bundled by `npm run build:bench`, as the host bundles its strict process.
const PROCESS = fileURLToPath(new URL('./ceiling-process.cjs', import.meta.url))
const ROOT = fileURLToPath(new URL('../..', import.meta.url))
const AJV = new URL('../src/ajv.js', import.meta.url).href

function once(spec: CeilingSpec): Promise<number> {
  const started = performance.now()
  const readRoots = [ROOT, ...new Set(spec.modules.map((m) => dirname(m)))]
  const [command, ...args] = strictCommand(PROCESS, { readRoots, networkNone: false, memMB: undefined, dataBaseline: undefined })
  // Its channel as the spawner makes a strict process's: stdin in, fd 3 out.
  const child = spawn(command as string, args, { stdio: ['pipe', 'inherit', 'inherit', 'pipe'] })
  child.stdin?.write(`${JSON.stringify({ modules: spec.modules, input: spec.input, schemas: spec.schemas, ajv: AJV })}\n`)
  return new Promise((resolve, reject) => {
    child.stdio[3]?.once('data', () => {
      const ms = performance.now() - started
      child.once('exit', () => resolve(ms))
      child.kill('SIGKILL')
    })
    child.once('error', reject)
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
  process.stdout.write(`${JSON.stringify(await measureCeiling(spec))}\n`)
}
