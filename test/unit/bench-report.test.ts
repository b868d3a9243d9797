// The benchmark's pure parts (bench/): statistics, the per-round ratios the targets use, the
// table, and profile categories. No benchmark runs here.
import { describe, expect, it } from 'vitest'
import type { LoadResult } from '../../bench/load.js'
import { categorize, summarizeProfile, type CpuProfile } from '../../bench/profile.js'
import { markdownTable, micros, renderTable, rows, strictCpuLine, targets, type Results, type Run } from '../../bench/report.js'
import { median, medianDifference, medianRatio, percentileSorted, ratio } from '../../bench/stats.js'

function load(rps: number, p50Us: number, p99Us: number): LoadResult {
  return { requests: rps, non200: 0, errors: 0, timeouts: 0, elapsedS: 1, rps, p50Us, p90Us: p99Us, p99Us, maxUs: p99Us, meanUs: p50Us }
}

function run(round: number, caseId: Run['caseId'], connections: number, server: Run['server'], l: LoadResult): Run {
  return { round, caseId, connections, server, load: l, rssPeakBytes: 100 * 1024 * 1024, rssLastBytes: 0, cpuUsPerCall: 50 }
}

describe('stats', () => {
  it('median of odd and even counts, ignoring NaN', () => {
    expect(median([3, 1, 2])).toBe(2)
    expect(median([4, 1, 3, 2])).toBe(2.5)
    expect(median([Number.NaN, 5])).toBe(5)
    expect(median([])).toBeNaN()
  })
  it('nearest-rank percentiles', () => {
    const xs = Array.from({ length: 100 }, (_, i) => i + 1)
    expect(percentileSorted(xs, 50)).toBe(50)
    expect(percentileSorted(xs, 99)).toBe(99)
    expect(percentileSorted(xs, 100)).toBe(100)
    expect(percentileSorted([7], 99)).toBe(7)
    expect(percentileSorted([], 50)).toBeNaN()
  })
  it('ratios pair rounds, so drift between rounds cancels out', () => {
    expect(ratio(1, 0)).toBeNaN()
    // Round 2 ran on a machine twice as busy: per-round ratios stay 0.5.
    expect(medianRatio([50, 25, 50], [100, 50, 100])).toBe(0.5)
    expect(medianDifference([300, 200, 400], [100, 100, 100])).toBe(200)
  })
})

describe('report', () => {
  const cases = [
    { id: 'echo' as const, label: 'echo' },
    { id: 'strict' as const, label: 'strict posture' },
    { id: 'limits' as const, label: 'limits' },
  ]
  const runs: Run[] = []
  for (const round of [1, 2, 3]) {
    runs.push(run(round, 'echo', 1, 'host', load(4000, 250, 400)))
    runs.push(run(round, 'echo', 1, 'reference', load(8000, 100, 200)))
    runs.push(run(round, 'echo', 32, 'host', load(7000, 4000, 9000)))
    runs.push(run(round, 'echo', 32, 'reference', load(10000, 3000, 6000)))
    runs.push(run(round, 'limits', 32, 'host', load(6860, 4000, 9000)))
    runs.push(run(round, 'strict', 32, 'host', load(45, 600_000, 900_000)))
  }
  const ceiling = [1, 2, 3].map(() => ({ parallel: 2, calls: 100, elapsedS: 2, rps: 50, p50Ms: 30, cpuMsPerCall: 40 }))
  const results: Results = {
    date: '2026-01-01T00:00:00Z',
    mode: 'full',
    rounds: 3,
    durationS: 5,
    warmupS: 1,
    machine: { cpu: 'Test CPU', nproc: 2, node: 'v20', os: 'Linux', memTotalMiB: 1024, loadAvg: [0, 0, 0], note: '' },
    cases,
    prewarmed: [],
    runs,
    ceiling,
    ceilingSerial: ceiling,
    ceilingWithAjv: ceiling,
    paced: { rate: [25, 25, 25], strict: [load(25, 1500, 3000)], warm: [load(25, 300, 500)] },
    startup: { tools: 50, listeningMs: [400, 450, 600], nodeStartMs: [40, 40, 40] },
    workerMemory: { method: 'test', baseRssBytes: 0, baseThreads: 0, warmRssBytes: 0, warmThreads: 0, perWorkerBytes: 12 * 1024 * 1024 },
    phases: {},
  }

  it('a row per case and callers, with per-round ratios', () => {
    const echo32 = rows(results).find((r) => r.caseId === 'echo' && r.connections === 32)!
    expect(echo32.rpsRatio).toBeCloseTo(0.7)
    expect(echo32.p99Ratio).toBeCloseTo(1.5)
    expect(rows(results).find((r) => r.caseId === 'echo' && r.connections === 1)!.p50AddedUs).toBe(150)
  })

  it('each target judged against its goal', () => {
    const verdicts = Object.fromEntries(targets(results).map((t) => [t.name.split(':')[0]!.split(' (')[0], t.pass]))
    expect(verdicts['echo, 32 callers']).toBe(true)
    expect(verdicts['echo, 1 caller']).toBe(false) // 150 µs added > 100 µs
    expect(verdicts['strict, 32 callers']).toBe(true) // 45/s against a ceiling of 50/s: 0.9×, the goal
    expect(targets(results).find((t) => t.name.startsWith('strict, 32'))!.measured).toBe('0.90×')
    expect(targets(results).find((t) => t.name.startsWith('limits'))!.measured).toBe('2.0 %')
    expect(targets(results).find((t) => t.name.startsWith('start'))!.pass).toBe(true) // median 450 ms
    expect(targets(results).find((t) => t.name.startsWith('RSS'))!.pass).toBe(true)
  })

  it('limits are judged by the median of back-to-back pairs when there are some, not by runs minutes apart', () => {
    // Limits against echo per pair: 0.97, 1.02, 0.90, 0.99, 0.95 (median 0.97); the echo case alone says 2.0 %.
    const pairs = [
      [9700, 10000],
      [10200, 10000],
      [9000, 10000],
      [9900, 10000],
      [9500, 10000],
    ].map(([limits, echo], i) => ({
      round: 1,
      echoFirst: i % 2 === 0,
      echo: load(echo!, 4000, 9000),
      limits: load(limits!, 4000, 9000),
    }))
    const limits = targets({ ...results, limitsPairs: pairs }).find((t) => t.name.startsWith('limits'))!
    expect(limits.name).toContain('median of back-to-back pairs')
    expect(limits.measured).toBe('3.0 % (5 pairs; middle half 1.0 % to 5.0 %)')
    expect(limits.pass).toBe(true)
    const worse = pairs.map((p) => ({ ...p, limits: load(p.limits.rps * 0.9, 4000, 9000) }))
    expect(targets({ ...results, limitsPairs: worse }).find((t) => t.name.startsWith('limits'))!.pass).toBe(false)
  })

  it('strict is judged against the ceiling measured just before and after it when there is one, not at the round start', () => {
    // Host strict: 45/s each round. Round-start ceilings: 50/s (0.90×). Bracketing ceilings: 60 and 58, 50 and 52, 62 and 60.
    const c = (rps: number) => ({ parallel: 2, calls: 100, elapsedS: 2, rps, p50Ms: 30, cpuMsPerCall: 40 })
    const strictCeiling = [
      [60, 58],
      [50, 52],
      [62, 60],
    ].map(([before, after], i) => ({ round: i + 1, before: c(before!), after: c(after!) }))
    const strict = targets({ ...results, strictCeiling }).find((t) => t.name.startsWith('strict, 32'))!
    expect(strict.name).toContain('just before and after (59.0/s)')
    expect(strict.measured).toBe('0.76×') // per round 45/59, 45/51, 45/61: median 0.763
    expect(strict.pass).toBe(false)
  })

  it("states the strict call's CPU against the ceiling unit's, per round, beside the rates", () => {
    // Host strict calls cost 50, 48 and 60 ms of the tree's CPU; the ceiling's units 42, 45 and 45 (means of before and after).
    const hostMs = [50, 48, 60]
    const withCpu = results.runs.map((r) => (r.caseId === 'strict' ? { ...r, cpuUsPerCall: (hostMs[r.round - 1] as number) * 1000 } : r))
    const unit = (cpuMsPerCall: number) => ({ parallel: 2, calls: 100, elapsedS: 2, rps: 50, p50Ms: 30, cpuMsPerCall })
    const strictCeiling = [
      [40, 44],
      [44, 46],
      [45, 45],
    ].map(([before, after], i) => ({ round: i + 1, before: unit(before!), after: unit(after!) }))
    const line = strictCpuLine({ ...results, runs: withCpu, strictCeiling })
    // Per round 42/50, 45/48, 45/60: 0.84, 0.94, 0.75.
    expect(line).toBe(
      'strict CPU, 32 callers: the host 50.0 ms a call (its whole tree), the ceiling 45.0 ms a unit (its driver and processes); ceiling/host per round 0.84, 0.94, 0.75, median 0.84×',
    )
    expect(renderTable({ ...results, runs: withCpu, strictCeiling })).toContain(line)
    // Without the bracketing ceilings (an older results.json) there is nothing to state.
    expect(strictCpuLine(results)).toBeUndefined()
  })

  it('says how much of the machine its hypervisor gave other guests during the run, and warns of the rates when it is much', () => {
    const stolen = renderTable({ ...results, machine: { ...results.machine, stealShare: 0.234 } })
    expect(stolen).toContain("time stolen by the hypervisor's other guests during the run: 23 %")
    expect(stolen).toContain("23 % of the machine's time went to other guests: the rates above moved with it")
    const quiet = renderTable({ ...results, machine: { ...results.machine, stealShare: 0.01 } })
    expect(quiet).toContain('during the run: 1 %')
    expect(quiet).not.toContain('went to other guests')
    expect(renderTable(results)).not.toContain('stolen')
  })

  it('renders one markdown table with PASS and FAIL', () => {
    const table = renderTable(results)
    expect(table).toContain('| echo ')
    expect(table).toContain('PASS')
    expect(table).toContain('FAIL')
    expect(table).toContain('Test CPU, 2 cores')
  })

  it('formats cells', () => {
    expect(markdownTable(['a', 'bb'], [['1', '2']])).toBe('| a | bb |\n|---|----|\n| 1 | 2  |')
    expect(micros(1500)).toBe('1.50 ms')
    expect(micros(87.4)).toBe('87 µs')
    expect(micros(Number.NaN)).toBe('n/a')
  })
})

describe('profile summary', () => {
  it('categorizes frames by where their code lives', () => {
    const frame = (url: string, functionName = 'f') => ({ functionName, url, lineNumber: 0, columnNumber: 0 })
    expect(categorize(frame('file:///x/node_modules/hono/dist/hono-base.js'))).toBe('Hono (routing, Context)')
    expect(categorize(frame('file:///x/node_modules/@hono/node-server/dist/index.mjs'))).toMatch(/^@hono\/node-server/)
    expect(categorize(frame('file:///x/node_modules/pino/lib/proto.js'))).toBe('pino logging')
    expect(categorize(frame('file:///x/dist/src/http/invoke.js'))).toBe('our front code (dist/src)')
    expect(categorize(frame('node:_http_server'))).toBe('node:http (parse, headers, write)')
    expect(categorize(frame('', 'writev'))).toBe('socket writes (kernel send)')
    expect(categorize(frame('', '(idle)'))).toBe('idle')
  })

  it('self time by category as a share of busy time, idle left out', () => {
    const profile: CpuProfile = {
      startTime: 0,
      endTime: 400,
      nodes: [
        { id: 1, callFrame: { functionName: '(root)', url: '', lineNumber: 0, columnNumber: 0 }, children: [2, 3] },
        { id: 2, callFrame: { functionName: '(idle)', url: '', lineNumber: 0, columnNumber: 0 } },
        { id: 3, callFrame: { functionName: 'invoke', url: 'file:///r/dist/src/http/invoke.js', lineNumber: 0, columnNumber: 0 }, children: [4] },
        { id: 4, callFrame: { functionName: 'parse', url: '', lineNumber: 0, columnNumber: 0 } },
      ],
      samples: [2, 3, 4, 4],
      timeDeltas: [100, 100, 100, 100],
    }
    const s = summarizeProfile(profile)
    expect(s.totalUs).toBe(400)
    expect(s.busyUs).toBe(300)
    expect(s.categories.map((c) => [c.name, Math.round(c.share * 100)])).toEqual([
      ['JSON parse/stringify', 67],
      ['our front code (dist/src)', 33],
    ])
    // invoke is on the stack of every busy sample.
    expect(s.topInclusive[0]).toMatchObject({ us: 300, share: 1 })
  })
})
