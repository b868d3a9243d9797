// The strict posture's ceiling on this machine: how many times a second the isolation unit
// (a process under the strict flags the host uses) can be started, given the pack's modules,
// used for one call and killed, `parallel` at a time.
// Run as its own process: `node dist/bench/strict-ceiling.js '<CeilingSpec JSON>'`.
import { spawn } from 'node:child_process'
import { mkdtemp, rm } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { dirname, join } from 'node:path'
import { fileURLToPath } from 'node:url'
import { callFolderEnv, strictCommand } from '../src/pool/strict-flags.js'
import { cleanEnv, procCpuMs } from './proc.js'
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

export type CeilingResult = {
  parallel: number
  calls: number
  elapsedS: number
  rps: number
  p50Ms: number
  /**
   * CPU (user + system) per call of this driver and the processes it started and reaped, in ms:
   * what a unit costs the machine, unlike `rps` untouched by what else the machine runs (a
   * hypervisor's other guests took up to half of these 2 cores' time on some days).
   */
  cpuMsPerCall: number
}

// Bundled by `npm run build:bench`, as the host bundles its strict process.
const PROCESS = fileURLToPath(new URL('./ceiling-process.cjs', import.meta.url))
const ROOT = fileURLToPath(new URL('../..', import.meta.url))
const AJV = new URL('../src/ajv.js', import.meta.url).href

async function once(spec: CeilingSpec): Promise<number> {
  const started = performance.now()
  // Its own call folder, made before it starts and removed after it ends, as the spawner does
  // for a strict call's process: the kernel's wall lets it write there only, and it does not
  // start without one.
  const folder = await mkdtemp(join(tmpdir(), 'kindgi-ceiling-'))
  const readRoots = [ROOT, ...new Set(spec.modules.map((m) => dirname(m)))]
  const [command, ...args] = strictCommand(PROCESS, { readRoots, networkNone: false, memMB: undefined, dataBaseline: undefined })
  // Its channel as the spawner makes a strict process's: stdin in, fd 3 out. Its environment as
  // the benchmark's host gets it (proc.ts), which passes it on to its strict processes.
  const child = spawn(command as string, args, { stdio: ['pipe', 'inherit', 'inherit', 'pipe'], env: callFolderEnv(folder, cleanEnv()) })
  child.stdin?.on('error', () => undefined) // a process that did not start is reported by its exit
  child.stdin?.write(`${JSON.stringify({ modules: spec.modules, input: spec.input, schemas: spec.schemas, ajv: AJV })}\n`)
  const answered = new Promise<number | Error>((resolve) => {
    child.stdio[3]?.once('data', () => {
      resolve(performance.now() - started)
      child.kill('SIGKILL')
    })
    // 'close', not 'exit': it ends itself once its answer is written, which may be read after it has exited.
    child.once('close', (code, signal) => resolve(new Error(`the ceiling's process exited (${signal ?? `code ${code}`}) before it answered`)))
    child.once('error', (error) => resolve(error))
  })
  const ended = new Promise((resolve) => {
    child.once('exit', resolve)
    child.once('error', resolve)
  })
  const ms = await answered
  await ended
  await rm(folder, { recursive: true, force: true })
  if (ms instanceof Error) throw ms
  return ms
}

export async function measureCeiling(spec: CeilingSpec): Promise<CeilingResult> {
  await once(spec) // warm the module cache of this process's loader
  const deadline = performance.now() + spec.durationS * 1000
  const times: number[] = []
  const t0 = performance.now()
  // Every process started in the window has been reaped by its end (once() waits for its exit).
  const cpuBefore = procCpuMs(process.pid)
  await Promise.all(
    Array.from({ length: spec.parallel }, async () => {
      while (performance.now() < deadline) times.push(await once(spec))
    }),
  )
  const elapsedS = (performance.now() - t0) / 1000
  const cpuMsPerCall = (procCpuMs(process.pid) - cpuBefore) / times.length
  return { parallel: spec.parallel, calls: times.length, elapsedS, rps: times.length / elapsedS, p50Ms: median(times), cpuMsPerCall }
}

if (process.argv[1] === fileURLToPath(import.meta.url)) {
  const spec = JSON.parse(process.argv[2] as string) as CeilingSpec
  process.stdout.write(`${JSON.stringify(await measureCeiling(spec))}\n`)
}
