// One run of faults under load, as both `npm test` and the soak use it: warm up, sample the
// process, run the mix with /healthz polled, judge every call, the journal and the call
// lines, then wait for idle workers to retire and sample again.
import { mkdtempSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { expect } from 'vitest'
import { FIXTURES, spawnHost, type Host, within } from '../helpers/host.js'
import { removeTempDir } from '../helpers/temp-dir.js'
import { pollHealth } from './driver.js'
import { admittedOverlap, callLineProblems, countByKind, FAULT_KINDS, outcomeProblem, readJournal, runMix, type Outcome } from './fault-mix.js'
import { sample, settle, type ProcSample } from './proc.js'

export const FAULT_INDEX = `${FIXTURES}/fault-pack/index.json`

export function spawnFaultHost(cap: number): Promise<Host> {
  return spawnHost({ index: FAULT_INDEX, env: { KINDGI_PACK_SERVICE_MAX_CONCURRENCY: String(cap) } })
}

export type LoadReport = {
  seed: number
  calls: number
  answered: number
  refused: number
  byKind: ReturnType<typeof countByKind>
  maxAdmitted: number
  maxRunning: number
  before: ProcSample
  after: ProcSample & { waitedMs: number }
  peak: ProcSample
  healthPolls: number
  healthMaxMs: number
  workersReplaced: number
  durationMs: number
}

/**
 * Runs `calls` calls at `concurrency` against `host` (capped at `cap`) and asserts every promise of issue 8.
 * Its journals go in `dir`, which the host's calls write: the caller removes it once the host is stopped.
 */
export async function faultsUnderLoad(
  host: Host,
  options: { cap: number; calls: number; concurrency: number; timeLimitMs: number; seed: number; settleMs: number; dir: string },
): Promise<LoadReport> {
  const { dir } = options
  const pid = host.proc.pid!
  const started = Date.now()

  // Warm-up, one call of each fault at a time, so lazily started threads exist before the first sample.
  const warm = await runMix(host, {
    calls: 30,
    concurrency: 1,
    journal: join(dir, 'warm'),
    seed: options.seed + 1,
    timeLimitMs: 30_000,
    kinds: FAULT_KINDS.filter((k) => k !== 'disconnect'),
  })
  expect(warm.map((o) => outcomeProblem(o)).filter((p) => p !== undefined)).toEqual([])
  // The settled count: the fewest threads over two seconds (a worker still exiting adds one).
  let before = sample(pid)
  for (let i = 0; i < 5; i++) {
    await new Promise((r) => setTimeout(r, 400))
    const now = sample(pid)
    if (now.threads < before.threads) before = now
  }
  const replacedBefore = host.lines.filter((l) => l.kind === 'worker-replaced').length

  let peak = before
  const sampler = setInterval(() => {
    const now = sample(pid)
    if (now.threads > peak.threads || now.rssMB > peak.rssMB) peak = { threads: Math.max(now.threads, peak.threads), rssMB: Math.max(now.rssMB, peak.rssMB) }
  }, 250)
  const health = pollHealth(host)
  const journal = join(dir, 'journal')
  let outcomes: Outcome[]
  try {
    outcomes = await runMix(host, { calls: options.calls, concurrency: options.concurrency, journal, seed: options.seed, timeLimitMs: options.timeLimitMs })
  } catch (err) {
    clearInterval(sampler)
    throw err
  }
  // Then pure load, good calls only, twice the cap at a time: the cap is reached, and held.
  let saturation: Outcome[] = []
  try {
    saturation = await runMix(host, {
      calls: 10 * options.cap,
      concurrency: 2 * options.cap,
      journal,
      seed: options.seed + 2,
      timeLimitMs: 30_000,
      kinds: ['good'],
    })
  } finally {
    clearInterval(sampler)
  }
  const polled = await health.stop()

  // Every call: its one right answer, or a 503 that provably never ran it.
  expect(host.proc.exitCode).toBeNull()
  expect(outcomes.map((o) => outcomeProblem(o)).filter((p) => p !== undefined)).toEqual([])
  expect(saturation.map((o) => outcomeProblem(o)).filter((p) => p !== undefined)).toEqual([])
  expect(polled.failures).toEqual([])
  const all = [...outcomes, ...saturation]
  await within(10_000, () => callLineProblems(host, all).length === 0) // the last call lines reach stderr
  expect(callLineProblems(host, all)).toEqual([])

  // The cap: never more calls running at once than it allows, though the load reached it
  // (so a broken cap would have shown); a call refused with 503 never ran.
  // Two views: calls admitted at once (from the front's call lines) and pack code running at
  // once (from the record tool's journal).
  const admitted = admittedOverlap(host)
  const ran = readJournal(journal)
  const refused = [...outcomes, ...saturation].filter((o) => o.status === 503)
  expect(admitted).toBeLessThanOrEqual(options.cap)
  expect(ran.maxOverlap).toBeLessThanOrEqual(options.cap)
  expect(admitted).toBeGreaterThanOrEqual(Math.ceil(options.cap / 2))
  expect(refused.length).toBeGreaterThan(0)
  expect(refused.filter((o) => ran.ran.has(o.id))).toEqual([])

  // No worker leaked: once idle workers retire (Piscina's idle timeout is 30 s), the thread
  // count is back where it was; and the process holds no more memory than a bounded margin.
  const after = await settle(pid, before.threads, options.settleMs)
  return {
    seed: options.seed,
    calls: outcomes.length + saturation.length,
    answered: [...outcomes, ...saturation].filter((o) => o.status === 200).length,
    refused: refused.length,
    byKind: countByKind([...outcomes, ...saturation]),
    maxAdmitted: admitted,
    maxRunning: ran.maxOverlap,
    before,
    after,
    peak,
    healthPolls: polled.polls,
    healthMaxMs: Math.round(polled.maxMs),
    workersReplaced: host.lines.filter((l) => l.kind === 'worker-replaced').length - replacedBefore,
    durationMs: Date.now() - started,
  }
}

export type DrainReport = { calls: number; answered: number; refusedDraining: number; cut: number; drainMs: number; exitCode: number | null }

/**
 * A SIGTERM `afterMs` into a mix of faults at `concurrency`: calls in flight get their right
 * answer, new ones a 503 draining, then `stopped` and exit 0 within the 8 s drain (+ margin).
 */
export async function drainUnderLoad(options: DrainOptions): Promise<DrainReport> {
  const dir = mkdtempSync(join(tmpdir(), 'kph-drain-'))
  let host: Host | undefined
  try {
    host = await spawnFaultHost(options.cap)
    return await drainOf(host, join(dir, 'journal'), options)
  } finally {
    // The journal's folder goes once the host whose calls write it is gone (it has exited, unless a check failed first).
    await host?.stop()
    removeTempDir(dir)
  }
}

type DrainOptions = { cap: number; concurrency: number; afterMs: number; seed: number }

async function drainOf(host: Host, journal: string, options: DrainOptions): Promise<DrainReport> {
  const DRAIN_MS = 8_000
  let signal: NodeJS.Signals | null = null
  host.proc.once('exit', (_code, s) => (signal = s))
  let stopSending = false
  const mix = runMix(host, {
    calls: 100_000,
    concurrency: options.concurrency,
    journal,
    seed: options.seed,
    timeLimitMs: options.afterMs + 20_000,
    stop: () => stopSending,
  })
  await new Promise((r) => setTimeout(r, options.afterMs))
  host.proc.kill('SIGTERM')
  const draining = await host.waitFor('draining')
  const drainingAt = Date.parse(draining.time as string)
  await new Promise((r) => setTimeout(r, 300)) // new calls meanwhile are refused with 503 draining
  stopSending = true
  const outcomes = await mix
  const exitCode = await host.exited
  const tail = host.lines.filter((l) => l.kind === 'non-json' || l.level === 'fatal').slice(-10)
  expect({ exitCode, signal, tail, stdout: host.stdout().slice(-2_000) }).toMatchObject({ exitCode: 0, signal: null, tail: [] })
  const stopped = host.lines.find((l) => l.kind === 'stopped')!
  const drainMs = Date.parse(stopped.time as string) - drainingAt
  expect(drainMs).toBeLessThan(DRAIN_MS + 3_000)

  // Each call: its right answer, or a 503 (overloaded, or draining once it began). No answer
  // at all only for a call sent after draining began (it may find the host gone), or one
  // still unanswered when the 8 s drain ran out (a starved machine: its connection is cut).
  const cutAt = drainingAt + DRAIN_MS - 100
  const excused = (o: Outcome) => o.error !== undefined && (o.sentAt >= drainingAt - 50 || o.sentAt + o.ms >= cutAt)
  const problems = outcomes
    .filter((o) => !excused(o))
    .map((o) => outcomeProblem(o, ['overloaded', 'draining']))
    .filter((p) => p !== undefined)
  expect(problems).toEqual([])
  // The drain did something: calls in flight at SIGTERM were answered, new ones refused.
  const finishedDuringDrain = outcomes.filter((o) => o.status === 200 && o.sentAt + o.ms > drainingAt)
  const refusedDraining = outcomes.filter((o) => o.status === 503 && o.body?.error === 'draining').length
  expect(finishedDuringDrain.length).toBeGreaterThan(0)
  expect(refusedDraining).toBeGreaterThan(0)
  return {
    calls: outcomes.length,
    answered: outcomes.filter((o) => o.status === 200).length,
    refusedDraining,
    cut: outcomes.filter((o) => o.error !== undefined && o.sentAt < drainingAt - 50 && o.kind !== 'disconnect').length,
    drainMs,
    exitCode,
  }
}
