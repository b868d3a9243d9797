// `node dist/bench/side-by-side.js --base <checkout> [--base-node <node binary>] [--rounds 3]
// [--duration 5] [--callers 1,32] [--case echo] [--env K=V] [--base-env K=V]`: this build
// against another build of the host (a checkout with its own `npm run build`; an old build may
// need the Node release it was made for; or this checkout, with `--base-env` settings of its
// own, to compare a setting), both driven by this checkout's load generator and pack, in
// alternating rounds (A B A B…, the order swapping each round) so the machine's noise falls on
// both. Prints each round and the medians, ranges and per-round ratios; the issues' speed
// constraints are stated this way.
import { join, resolve } from 'node:path'
import { benchCases, type CaseId } from './cases.js'
import { loadSpec, startLoadGenerator, type LoadGenerator, type LoadResult } from './load.js'
import { BENCH_INDEX, HOST_BIN, startServer, type Server } from './proc.js'
import { median } from './stats.js'

type Options = {
  base: string
  baseNode: string | undefined
  rounds: number
  durationS: number
  warmupS: number
  callers: number[]
  caseId: CaseId
  env: Record<string, string>
  /** Set for the base only, over `env`. */
  baseEnv: Record<string, string>
}

function parseOptions(argv: string[]): Options {
  const value = (name: string) => {
    const i = argv.indexOf(name)
    return i === -1 ? undefined : argv[i + 1]
  }
  const base = value('--base')
  if (base === undefined) throw new Error('side-by-side needs --base <a checkout of the host, built>')
  const settings = (flag: string) => {
    const env: Record<string, string> = {}
    argv.forEach((a, i) => {
      if (a !== flag) return
      const [k, ...v] = (argv[i + 1] ?? '').split('=')
      if (k) env[k] = v.join('=')
    })
    return env
  }
  return {
    base: resolve(base),
    baseNode: value('--base-node'),
    rounds: Number(value('--rounds') ?? 3),
    durationS: Number(value('--duration') ?? 5),
    warmupS: Number(value('--warmup') ?? 1),
    callers: (value('--callers') ?? '1,32').split(',').map(Number),
    caseId: (value('--case') ?? 'echo') as CaseId,
    env: settings('--env'),
    baseEnv: settings('--base-env'),
  }
}

type Side = { name: 'base' | 'this'; server: Server }
type Sample = { side: Side['name']; callers: number; round: number; load: LoadResult }

function log(line: string): void {
  process.stderr.write(`[side-by-side] ${line}\n`)
}

/** Grows each side's pools at the widest load until its answers per second stop rising. */
async function prewarm(gen: LoadGenerator, side: Side, body: string, callers: number): Promise<void> {
  for (let i = 0; i < 3; i++) await gen.run(loadSpec(side.server.url, body, callers, 0, 1))
}

function range(values: number[]): string {
  return `${Math.min(...values).toFixed(0)}–${Math.max(...values).toFixed(0)}`
}

function summary(samples: Sample[], o: Options): string {
  const lines: string[] = []
  lines.push('| callers | build | rps median (range) | p50 µs median (range) | p99 µs median (range) |')
  lines.push('|---|---|---|---|---|')
  for (const callers of o.callers) {
    for (const side of ['base', 'this'] as const) {
      const mine = samples.filter((s) => s.callers === callers && s.side === side).map((s) => s.load)
      const col = (f: (l: LoadResult) => number) => `${median(mine.map(f)).toFixed(0)} (${range(mine.map(f))})`
      lines.push(`| ${callers} | ${side} | ${col((l) => l.rps)} | ${col((l) => l.p50Us)} | ${col((l) => l.p99Us)} |`)
    }
  }
  lines.push('')
  lines.push('| callers | this/base rps per round | median | p99 this−base per round (µs) |')
  lines.push('|---|---|---|---|')
  for (const callers of o.callers) {
    const ratios: number[] = []
    const p99s: number[] = []
    for (let round = 0; round < o.rounds; round++) {
      const at = (side: Side['name']) => samples.find((s) => s.callers === callers && s.round === round && s.side === side)!.load
      ratios.push(at('this').rps / at('base').rps)
      p99s.push(at('this').p99Us - at('base').p99Us)
    }
    lines.push(`| ${callers} | ${ratios.map((r) => r.toFixed(3)).join(', ')} | ${median(ratios).toFixed(3)} | ${p99s.map((d) => d.toFixed(0)).join(', ')} |`)
  }
  return lines.join('\n')
}

async function main(): Promise<void> {
  const o = parseOptions(process.argv.slice(2))
  const bench = benchCases().find((c) => c.id === o.caseId)
  if (bench === undefined) throw new Error(`no bench case ${o.caseId}`)
  const gen = await startLoadGenerator()
  const sides: Side[] = []
  try {
    for (const [name, bin, node, env] of [
      ['base', join(o.base, 'dist/src/main.js'), o.baseNode, { ...o.env, ...o.baseEnv }],
      ['this', HOST_BIN, undefined, o.env],
    ] as const) {
      sides.push({ name, server: await startServer({ name, bin, node, index: BENCH_INDEX, env }) })
    }
    for (const side of sides) await prewarm(gen, side, bench.body, Math.max(...o.callers))
    const samples: Sample[] = []
    for (let round = 0; round < o.rounds; round++) {
      for (const callers of o.callers) {
        const order = round % 2 === 0 ? sides : [...sides].reverse()
        for (const side of order) {
          const load = await gen.run(loadSpec(side.server.url, bench.body, callers, o.warmupS, o.durationS))
          samples.push({ side: side.name, callers, round, load })
          log(
            `round ${round + 1} ${callers} callers ${side.name}: ${load.rps.toFixed(0)}/s p50 ${load.p50Us.toFixed(0)} µs p99 ${load.p99Us.toFixed(0)} µs non200 ${load.non200}`,
          )
        }
      }
    }
    process.stdout.write(
      `base: ${o.base}${o.baseNode === undefined ? '' : ` on ${o.baseNode}`}${Object.keys(o.baseEnv).length === 0 ? '' : ` with ${JSON.stringify(o.baseEnv)}`}\ncase: ${o.caseId}, ${o.rounds} rounds of ${o.durationS} s, Node ${process.version}\n\n${summary(samples, o)}\n`,
    )
  } finally {
    for (const side of sides) await side.server.stop()
    await gen.close()
  }
}

await main()
