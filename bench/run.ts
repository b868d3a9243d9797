// `npm run bench [-- --quick | --profile]`: starts the built host and the in-process
// reference on loopback, drives both with autocannon (its own process) alternating host,
// reference, host, reference…, measures the strict ceiling, start time and worker memory,
// prints one table and writes bench/results.json.
import { execFileSync, spawn } from 'node:child_process'
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs'
import { cpus, loadavg, tmpdir, totalmem, type as osType, release } from 'node:os'
import { join } from 'node:path'
import { fileURLToPath } from 'node:url'
import { benchCases, invokeBody, type BenchCase, type CaseId } from './cases.js'
import { loadSpec, startLoadGenerator, type LoadGenerator } from './load.js'
import { generatePack, writePack } from './pack-gen.js'
import { runProfile } from './profile-run.js'
import { BENCH_INDEX, HOST_BIN, REFERENCE_BIN, ROOT, call, nodeStartMs, procCpuMs, procStatus, sampleRss, startServer, type Server } from './proc.js'
import { micros, rate, renderTable, type LimitsPair, type Machine, type Results, type Run, type WorkerMemory } from './report.js'
import { median } from './stats.js'
import type { CeilingResult, CeilingSpec } from './strict-ceiling.js'

type Options = {
  quick: boolean
  profile: boolean
  rounds: number
  durationS: number
  warmupS: number
  cases: CaseId[] | undefined
  out: string
}

function parseOptions(argv: string[]): Options {
  const quick = argv.includes('--quick')
  const value = (name: string) => {
    const i = argv.indexOf(name)
    return i === -1 ? undefined : argv[i + 1]
  }
  return {
    quick,
    profile: argv.includes('--profile'),
    rounds: Number(value('--rounds') ?? (quick ? 1 : 3)),
    durationS: Number(value('--duration') ?? (quick ? 0.6 : 5)),
    warmupS: Number(value('--warmup') ?? (quick ? 0.2 : 1)),
    cases: value('--cases')?.split(',') as CaseId[] | undefined,
    out: value('--out') ?? `${ROOT}bench/results.json`,
  }
}

const CONNECTIONS = [1, 32]

function machine(): Machine {
  const cpuinfo = readFileSync('/proc/cpuinfo', 'utf8')
  const model = /^model name\s*:\s*(.+)$/m.exec(cpuinfo)?.[1] ?? cpus()[0]?.model ?? 'unknown'
  let nproc = cpus().length
  try {
    nproc = Number(execFileSync('nproc', { encoding: 'utf8' }).trim())
  } catch {
    // keep os.cpus()
  }
  return {
    cpu: model,
    nproc,
    node: process.version,
    os: `${osType()} ${release()}`,
    memTotalMiB: Math.round(totalmem() / 1024 / 1024),
    loadAvg: loadavg(),
    note: 'Shared machine (others run tests on it): trust the per-round ratios more than absolute numbers.',
  }
}

/** The machine's CPU time so far, in ticks (/proc/stat): all of it, and what the hypervisor gave other guests (steal). */
function cpuTimes(): { total: number; steal: number } {
  const fields = (readFileSync('/proc/stat', 'utf8').split('\n')[0] ?? '').trim().split(/\s+/).slice(1).map(Number)
  // user nice system idle iowait irq softirq steal guest guest_nice: guest time is inside user already.
  return { total: fields.slice(0, 8).reduce((a, b) => a + b, 0), steal: fields[7] ?? 0 }
}

function log(line: string): void {
  process.stderr.write(`[bench] ${line}\n`)
}

async function sanity(server: Server, c: BenchCase): Promise<void> {
  const { status, text } = await call(server.url, c.body)
  const kind = status === 200 ? (JSON.parse(text) as { kind?: string }).kind : undefined
  if (kind !== c.expect) throw new Error(`${server.name} answered ${c.id} with ${status} ${text.slice(0, 300)}`)
}

async function measure(gen: LoadGenerator, server: Server, body: string, connections: number, o: Options, overallRate?: number, warmupS = o.warmupS) {
  let sampler: ReturnType<typeof sampleRss> | undefined
  let cpuBefore = Number.NaN
  const load = await gen.run(loadSpec(server.url, body, connections, warmupS, o.durationS, overallRate), () => {
    cpuBefore = procCpuMs(server.pid)
    sampler = sampleRss(server.pid)
  })
  const cpuMs = procCpuMs(server.pid) - cpuBefore
  const rss = sampler?.stop() ?? { peakBytes: Number.NaN, lastBytes: Number.NaN }
  return { load, rssPeakBytes: rss.peakBytes, rssLastBytes: rss.lastBytes, cpuUsPerCall: load.requests > 0 ? (cpuMs * 1000) / load.requests : Number.NaN }
}

/**
 * Drives the host's pools at 32 callers until they stop growing (Piscina adds a worker at a
 * time while calls queue, and each new worker imports the pack and compiles its schemas), so
 * the measured runs see the steady state a loaded service lives in, not its growth.
 */
async function prewarm(gen: LoadGenerator, server: Server, body: string, o: Options): Promise<{ seconds: number; threads: number }> {
  const started = performance.now()
  const stepS = o.quick ? 0.5 : 1
  let threads = procStatus(server.pid).threads
  for (let step = 0, stable = 0; step < (o.quick ? 3 : 20) && stable < (o.quick ? 1 : 2); step++) {
    await gen.run(loadSpec(server.url, body, Math.max(...CONNECTIONS), 0, stepS))
    const now = procStatus(server.pid).threads
    stable = now > threads ? 0 : stable + 1
    threads = now
  }
  return { seconds: (performance.now() - started) / 1000, threads }
}

/** Pairs a round: the limits target takes the median of all of them (report.ts, `limitsPairs`). */
const LIMITS_PAIRS = 8
/** Warmup before each run of a pair: the other group's workers park, this one's wake. */
const PAIR_WARMUP_S = 0.3

/** Echo and the limited tool at 32 callers on the host, back to back, the order alternating. */
async function limitsPairs(gen: LoadGenerator, host: Server, limitsBody: string, o: Options, round: number): Promise<LimitsPair[]> {
  const echoBody = invokeBody('echo', { message: 'hello, bench' })
  // The limited tool's pool was grown just now (the case's own prewarm); grow echo's too.
  await prewarm(gen, host, echoBody, o)
  const pairs: LimitsPair[] = []
  const count = o.quick ? 3 : LIMITS_PAIRS
  const durationS = o.quick ? o.durationS : Math.min(o.durationS, 2)
  for (let i = 0; i < count; i++) {
    const echoFirst = (round + i) % 2 === 0
    // The barrier before the window sends the run's own tool too (both are cheap): an echo
    // barrier before a limits window would wake echo's workers just as the window opens.
    const runOne = (body: string) => gen.run({ ...loadSpec(host.url, body, 32, PAIR_WARMUP_S, durationS), barrierBody: body })
    const first = await runOne(echoFirst ? echoBody : limitsBody)
    const second = await runOne(echoFirst ? limitsBody : echoBody)
    const pair = echoFirst ? { round, echoFirst, echo: first, limits: second } : { round, echoFirst, echo: second, limits: first }
    pairs.push(pair)
    log(`round ${round} limits pair ${i + 1}: echo ${rate(pair.echo.rps)}, limits ${rate(pair.limits.rps)} (${(pair.limits.rps / pair.echo.rps).toFixed(3)})`)
  }
  return pairs
}

function runCeiling(spec: CeilingSpec): Promise<CeilingResult> {
  const script = fileURLToPath(new URL('./strict-ceiling.js', import.meta.url))
  return new Promise((resolve, reject) => {
    const proc = spawn(process.execPath, [script, JSON.stringify(spec)], { stdio: ['ignore', 'pipe', 'inherit'] })
    let out = ''
    proc.stdout.on('data', (d: Buffer) => (out += d.toString()))
    proc.once('exit', (code) => (code === 0 ? resolve(JSON.parse(out) as CeilingResult) : reject(new Error(`strict-ceiling exited ${code}`))))
  })
}

function strictCeilingSpec(nproc: number, durationS: number, withAjv: boolean, parallel = nproc): CeilingSpec {
  const index = JSON.parse(readFileSync(BENCH_INDEX, 'utf8')) as { tools: Array<{ id: string; modulePath: string; input: object; output: object }> }
  const tool = index.tools.find((t) => t.id === 'echo-strict')!
  return {
    modules: [join(ROOT, 'bench/pack', tool.modulePath)],
    input: { message: 'hello, bench' },
    schemas: withAjv ? [tool.input, tool.output] : undefined,
    parallel,
    durationS,
  }
}

async function startupTimes(o: Options): Promise<Results['startup']> {
  const dir = mkdtempSync(join(tmpdir(), 'kindgi-bench-pack-'))
  const tools = 50
  try {
    const index = writePack(dir, generatePack(tools))
    const listeningMs: number[] = []
    const nodeMs: number[] = []
    for (let i = 0; i < (o.quick ? 1 : 3); i++) {
      nodeMs.push(await nodeStartMs())
      const server = await startServer({ name: 'host (50 tools)', bin: HOST_BIN, index })
      listeningMs.push(server.startMs)
      const { status } = await call(server.url, invokeBody('gen.tool-049', { name: 'x', n: 1 }))
      await server.stop()
      if (status !== 200) throw new Error(`the 50-tool host answered ${status}`)
    }
    return { tools, listeningMs, nodeStartMs: nodeMs }
  } finally {
    rmSync(dir, { recursive: true, force: true })
  }
}

/**
 * Memory per warm worker: a host capped at N calls in flight is driven with N concurrent
 * `sleep` calls (they hold a worker without using CPU), so its shared pool grows from its
 * 2 warm workers to N. (RSS after − RSS before) / (OS threads after − before).
 */
async function workerMemory(o: Options): Promise<WorkerMemory> {
  const n = 10
  const server = await startServer({ name: 'host (memory)', bin: HOST_BIN, index: BENCH_INDEX, env: { KINDGI_PACK_SERVICE_MAX_CONCURRENCY: String(n) } })
  try {
    await call(server.url, invokeBody('sleep', { ms: 1 }))
    await new Promise((r) => setTimeout(r, o.quick ? 300 : 1000))
    const base = procStatus(server.pid)
    for (let i = 0; i < (o.quick ? 2 : 3); i++) {
      const answers = await Promise.all(Array.from({ length: n }, () => call(server.url, invokeBody('sleep', { ms: 400 }))))
      if (answers.some((a) => a.status !== 200)) throw new Error(`sleep answered ${answers.map((a) => a.status).join(',')}`)
    }
    await new Promise((r) => setTimeout(r, o.quick ? 300 : 1000))
    const warm = procStatus(server.pid)
    const added = warm.threads - base.threads
    return {
      method:
        `host with KINDGI_PACK_SERVICE_MAX_CONCURRENCY=${n}, driven with ${n} concurrent sleep calls so its shared pool grows; ` +
        `(RSS ${mibOf(warm.rssBytes)} − ${mibOf(base.rssBytes)}) / (${warm.threads} − ${base.threads} OS threads)`,
      baseRssBytes: base.rssBytes,
      baseThreads: base.threads,
      warmRssBytes: warm.rssBytes,
      warmThreads: warm.threads,
      perWorkerBytes: added > 0 ? (warm.rssBytes - base.rssBytes) / added : Number.NaN,
    }
  } finally {
    await server.stop()
  }
}

function mibOf(bytes: number): string {
  return `${(bytes / 1024 / 1024).toFixed(1)} MiB`
}

async function main(): Promise<void> {
  for (const signal of ['SIGINT', 'SIGTERM'] as const) process.once(signal, () => process.exit(130))
  const o = parseOptions(process.argv.slice(2))
  if (o.profile) return runProfile({ durationS: o.quick ? 3 : 8 })
  const startedAt = performance.now()
  const m = machine()
  const timesBefore = cpuTimes()
  const cases = benchCases().filter((c) => o.cases === undefined || o.cases.includes(c.id))
  log(`${o.quick ? 'quick' : 'full'} mode: ${o.rounds} round(s), ${o.durationS} s per run, cases ${cases.map((c) => c.id).join(', ')}`)

  const gen = await startLoadGenerator()
  const host = await startServer({ name: 'host', bin: HOST_BIN, index: BENCH_INDEX })
  const reference = await startServer({ name: 'reference', bin: REFERENCE_BIN, index: BENCH_INDEX })
  const runs: Run[] = []
  const ceiling: CeilingResult[] = []
  const ceilingSerial: CeilingResult[] = []
  const ceilingWithAjv: CeilingResult[] = []
  const paced: Results['paced'] = { rate: [], strict: [], warm: [] }
  const pairs: LimitsPair[] = []
  const strictCeiling: NonNullable<Results['strictCeiling']> = []
  const prewarmed: Results['prewarmed'] = []
  const phases: Record<string, number> = {}
  let phaseStart = performance.now()
  const phase = (name: string) => {
    const now = performance.now()
    phases[name] = Math.round(now - phaseStart) / 1000
    phaseStart = now
  }
  try {
    for (const c of cases) for (const server of [host, reference]) await sanity(server, c)
    phase('start and check both servers')
    const ceilingS = o.quick ? 1 : 3
    for (let round = 1; round <= o.rounds; round++) {
      const top = await runCeiling(strictCeilingSpec(m.nproc, ceilingS, false))
      ceiling.push(top)
      ceilingSerial.push(await runCeiling(strictCeilingSpec(m.nproc, ceilingS / 3, false, 1)))
      ceilingWithAjv.push(await runCeiling(strictCeilingSpec(m.nproc, ceilingS / 3, true)))
      phase(`round ${round}: ceilings`)
      log(`round ${round}: strict-process ceiling ${top.rps.toFixed(1)}/s`)
      for (const c of cases) {
        const strict = c.id === 'strict' || c.id === 'strict-none'
        for (const connections of CONNECTIONS) {
          // Each group's pool shrinks back after 30 s idle: grow it again before measuring at 32 callers (a strict call has no pool).
          if (connections > 1 && !strict) {
            const warmed = await prewarm(gen, host, c.body, o)
            prewarmed.push({ round, caseId: c.id, ...warmed })
            log(`round ${round} ${c.id}: the host's pool stopped growing at ${warmed.threads} OS threads after ${warmed.seconds.toFixed(1)} s`)
          }
          // The strict target's ceiling brackets the host's strict run: measured just before and just after.
          const bracketsStrict = c.id === 'strict' && connections > 1
          for (const server of [host, reference]) {
            const before = bracketsStrict && server === host ? await runCeiling(strictCeilingSpec(m.nproc, ceilingS, false)) : undefined
            // A strict call has no warm pool to warm up; quick mode saves the time (a strict call lasts a worker start).
            const r = await measure(gen, server, c.body, connections, o, undefined, o.quick && strict ? 0 : o.warmupS)
            runs.push({ round, caseId: c.id, connections, server: server.name as Run['server'], ...r })
            log(`round ${round} ${c.id} x${connections} ${server.name}: ${rate(r.load.rps)} p50 ${micros(r.load.p50Us)} p99 ${micros(r.load.p99Us)}`)
            if (before !== undefined) {
              const after = await runCeiling(strictCeilingSpec(m.nproc, ceilingS, false))
              strictCeiling.push({ round, before, after })
              log(`round ${round} strict-process ceiling just before and after the strict run: ${before.rps.toFixed(1)}/s, ${after.rps.toFixed(1)}/s`)
            }
          }
          if (c.id === 'limits' && connections > 1) pairs.push(...(await limitsPairs(gen, host, c.body, o, round)))
        }
      }
      phase(`round ${round}: cases`)
      if (cases.some((c) => c.id === 'strict')) {
        const pace = Math.max(1, Math.floor(top.rps / 2))
        paced.rate.push(pace)
        const strictBody = cases.find((c) => c.id === 'strict')!.body
        paced.strict.push((await measure(gen, host, strictBody, 1, o, pace, o.quick ? 0 : o.warmupS)).load)
        paced.warm.push((await measure(gen, host, invokeBody('echo', { message: 'hello, bench' }), 1, o, pace)).load)
        phase(`round ${round}: paced`)
        log(`round ${round} paced at ${pace}/s: strict p50 ${micros(paced.strict.at(-1)!.p50Us)}, warm p50 ${micros(paced.warm.at(-1)!.p50Us)}`)
      }
    }
  } finally {
    await Promise.all([host.stop(), reference.stop(), gen.close()])
  }
  const startup = await startupTimes(o)
  phase('start → listening')
  log(`start → listening (50 tools): ${startup.listeningMs.map((x) => x.toFixed(0)).join(', ')} ms`)
  const memory = await workerMemory(o)
  phase('memory per worker')

  const timesAfter = cpuTimes()
  const results: Results = {
    date: new Date().toISOString(),
    mode: o.quick ? 'quick' : 'full',
    rounds: o.rounds,
    durationS: o.durationS,
    warmupS: o.warmupS,
    machine: { ...m, stealShare: (timesAfter.steal - timesBefore.steal) / (timesAfter.total - timesBefore.total) },
    cases: cases.map((c) => ({ id: c.id, label: c.label })),
    prewarmed,
    runs,
    ceiling,
    ceilingSerial,
    ceilingWithAjv,
    paced,
    limitsPairs: pairs,
    strictCeiling,
    startup,
    workerMemory: memory,
    phases,
  }
  const table = renderTable(results)
  process.stdout.write(`\n${table}\n`)
  writeFileSync(o.out, `${JSON.stringify({ ...results, table }, null, 2)}\n`)
  log(
    `phases (s): ${Object.entries(phases)
      .map(([k, v]) => `${k} ${v}`)
      .join('; ')}`,
  )
  log(
    `wrote ${o.out} in ${((performance.now() - startedAt) / 1000).toFixed(1)} s (median host RSS ${mibOf(median(runs.filter((r) => r.server === 'host').map((r) => r.rssPeakBytes)))})`,
  )
}

await main()
