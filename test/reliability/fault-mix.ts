// Faults under load: a seeded mix of good calls and every way pack code fails (fault-pack), sent
// many at a time, and its judges: one right answer or a 503 per call, one `call` line per call
// that ran, and how many calls were admitted or running at once.
import { readFileSync } from 'node:fs'
import { TOKEN, type Host } from '../helpers/host.js'
import { responseMessageProblem } from './oracle.js'

export const FAULT_KINDS = ['good', 'throws', 'deadline', 'spin', 'blowup', 'exit', 'reject', 'late-throw', 'disconnect'] as const
export type FaultKind = (typeof FAULT_KINDS)[number]

const WEIGHTS: Record<FaultKind, number> = { good: 50, throws: 10, deadline: 8, spin: 4, blowup: 3, exit: 5, reject: 5, 'late-throw': 6, disconnect: 9 }

export type Outcome = { n: number; kind: FaultKind; id: string; status?: number; body?: any; error?: string; ms: number; sentAt: number }

/** A small seeded PRNG (mulberry32), so a mix can be replayed from its seed. */
export function prng(seed: number): () => number {
  let a = seed >>> 0
  return () => {
    a = (a + 0x6d2b79f5) >>> 0
    let t = a
    t = Math.imul(t ^ (t >>> 15), t | 1)
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61)
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296
  }
}

export function pickKind(rand: () => number, kinds: readonly FaultKind[] = FAULT_KINDS): FaultKind {
  const total = kinds.reduce((s, k) => s + WEIGHTS[k], 0)
  let r = rand() * total
  for (const k of kinds) {
    r -= WEIGHTS[k]
    if (r < 0) return k
  }
  return kinds[kinds.length - 1] as FaultKind
}

type Plan = { tool: string; input: Record<string, unknown>; timeoutMs: number; leaveAfterMs?: number }

function planFor(kind: FaultKind, id: string, journal: string, rand: () => number): Plan {
  const between = (lo: number, hi: number) => lo + Math.floor(rand() * (hi - lo))
  switch (kind) {
    case 'good':
      return { tool: 'record', input: { id, journal, ms: between(20, 150) }, timeoutMs: 30_000 }
    case 'deadline':
      return { tool: 'record', input: { id, journal, ms: 60_000 }, timeoutMs: between(100, 300) }
    case 'disconnect':
      return { tool: 'record', input: { id, journal, ms: 60_000 }, timeoutMs: 30_000, leaveAfterMs: between(30, 200) }
    case 'spin':
      return { tool: 'spin', input: {}, timeoutMs: between(100, 200) }
    default:
      return { tool: kind, input: { id }, timeoutMs: 30_000 }
  }
}

/** The one right answer for a call of `kind` that ran, or why `body` is not it. */
export function wrongAnswer(kind: FaultKind, id: string, body: any): string | undefined {
  const shape = responseMessageProblem(body)
  if (shape !== undefined) return shape
  const text = JSON.stringify(body).slice(0, 300)
  const error = (code: string, message: (m: string) => boolean) =>
    body.kind === 'error' && body.code === code && message(String(body.message)) ? undefined : `expected ${code}, got ${text}`
  switch (kind) {
    case 'good':
    case 'late-throw':
      return body.kind === 'result' && body.output?.id === id ? undefined : `expected a result for ${id}, got ${text}`
    case 'throws':
      return error('handler-throw', (m) => m === `Handler for tool "throws" threw: RangeError: fault ${id}`)
    case 'deadline':
      return error('deadline-exceeded', (m) => m === 'record passed its deadline')
    case 'spin':
      return error('deadline-exceeded', (m) => m === 'spin passed its deadline')
    case 'blowup':
      return error('handler-throw', (m) => m.includes('memory limit (memMB 64) was exceeded'))
    case 'exit':
    case 'reject':
      return error('handler-throw', (m) => m.includes('the worker running it exited'))
    case 'disconnect':
      return `a caller that left got an answer: ${text}`
  }
}

export type MixOptions = {
  calls: number
  concurrency: number
  journal: string
  seed: number
  timeLimitMs: number
  kinds?: readonly FaultKind[]
  stop?: () => boolean
}

/** Sends the mix, `concurrency` calls at a time, and records what each call got. Bounded by count and time. */
export async function runMix(host: Host, options: MixOptions): Promise<Outcome[]> {
  // Every call is planned up front from the seed, so a mix replays whatever the timing.
  const rand = prng(options.seed)
  const plans = Array.from({ length: options.calls }, (_, n) => {
    const kind = pickKind(rand, options.kinds)
    const id = `call-${options.seed}-${n}`
    return { kind, id, plan: planFor(kind, id, options.journal, rand) }
  })
  const outcomes: Outcome[] = []
  const deadline = Date.now() + options.timeLimitMs
  let next = 0
  const one = async (n: number) => {
    const { kind, id, plan } = plans[n]!
    const leave = new AbortController()
    const signals = [leave.signal, AbortSignal.timeout(60_000)]
    const started = performance.now()
    const outcome: Outcome = { n, kind, id, ms: 0, sentAt: Date.now() }
    let timer: NodeJS.Timeout | undefined
    if (plan.leaveAfterMs !== undefined) timer = setTimeout(() => leave.abort(), plan.leaveAfterMs)
    try {
      const res = await fetch(`${host.url}/v1/invoke`, {
        method: 'POST',
        headers: { 'content-type': 'application/json', 'kindgi-pack-token': TOKEN, 'kindgi-timeout-ms': String(plan.timeoutMs) },
        body: JSON.stringify({ v: 2, kind: 'invoke', tool: { id: plan.tool }, input: plan.input, ctx: { tenantId: 't', runId: id } }),
        signal: AbortSignal.any(signals),
      })
      outcome.status = res.status
      const text = await res.text()
      try {
        outcome.body = JSON.parse(text)
      } catch {
        outcome.body = text
      }
    } catch (err) {
      outcome.error = leave.signal.aborted ? 'left' : String((err as Error).cause ?? err)
    } finally {
      clearTimeout(timer)
    }
    outcome.ms = performance.now() - started
    outcomes.push(outcome)
  }
  const lane = async () => {
    while (next < options.calls && Date.now() < deadline && !(options.stop?.() ?? false)) {
      const n = next++
      await one(n)
      // A client told 503 backs off a little before its next call, as Retry-After asks.
      if (outcomes.at(-1)?.status === 503) await new Promise((r) => setTimeout(r, 100))
    }
  }
  await Promise.all(Array.from({ length: options.concurrency }, lane))
  return outcomes.sort((a, b) => a.n - b.n)
}

/** What went wrong with one call's outcome (undefined: a right answer, a 503, or a caller that left as planned). */
export function outcomeProblem(o: Outcome, refusals: readonly string[] = ['overloaded']): string | undefined {
  if (o.kind === 'disconnect' && o.error === 'left') return undefined
  if (o.error !== undefined) return `${o.id} (${o.kind}): no answer: ${o.error}`
  if (o.status === 503) {
    return refusals.includes(o.body?.error) ? undefined : `${o.id} (${o.kind}): 503 ${JSON.stringify(o.body)}`
  }
  if (o.status !== 200) return `${o.id} (${o.kind}): status ${o.status} ${JSON.stringify(o.body).slice(0, 300)}`
  const wrong = wrongAnswer(o.kind, o.id, o.body)
  return wrong === undefined ? undefined : `${o.id} (${o.kind}): ${wrong}`
}

export type Journal = { maxOverlap: number; ran: Set<string>; unfinished: string[] }

/**
 * Rebuilds from the record tool's journal how many calls ran at once. Intervals are [start,
 * end] on one monotonic clock, an end sorting before a start at the same instant, so the
 * count is a lower bound of the true concurrency: above the cap means the cap was broken.
 */
export function readJournal(path: string): Journal {
  let text = ''
  try {
    text = readFileSync(path, 'utf8')
  } catch {
    return { maxOverlap: 0, ran: new Set(), unfinished: [] }
  }
  const events: Array<{ t: bigint; end: boolean; id: string }> = []
  for (const line of text.split('\n')) {
    const [what, id, t] = line.split(' ')
    if ((what === 'S' || what === 'E') && id !== undefined && t !== undefined) events.push({ t: BigInt(t), end: what === 'E', id })
  }
  events.sort((a, b) => (a.t < b.t ? -1 : a.t > b.t ? 1 : a.end === b.end ? 0 : a.end ? -1 : 1))
  const ran = new Set(events.filter((e) => !e.end).map((e) => e.id))
  // A call whose worker was terminated before it wrote its end (a starved worker past the
  // abort grace) has no known end: leave it out rather than count it as running forever.
  const ended = new Set(events.filter((e) => e.end).map((e) => e.id))
  const open = new Set<string>()
  let maxOverlap = 0
  for (const e of events) {
    if (!ended.has(e.id)) continue
    if (e.end) open.delete(e.id)
    else {
      open.add(e.id)
      maxOverlap = Math.max(maxOverlap, open.size)
    }
  }
  return { maxOverlap, ran, unfinished: [...ran].filter((id) => !ended.has(id)) }
}

/** Faults injected by kind, counting only calls that were not refused with a 503. */
export function countByKind(outcomes: Outcome[]): Record<string, { sent: number; ran: number; refused: number }> {
  const out: Record<string, { sent: number; ran: number; refused: number }> = {}
  for (const o of outcomes) {
    out[o.kind] ??= { sent: 0, ran: 0, refused: 0 }
    const row = out[o.kind]
    row.sent++
    if (o.status === 503) row.refused++
    else row.ran++
  }
  return out
}

/** Each call that reached the pack logs exactly one `call` line, with the outcome it was answered; a 503 logs none. */
export function callLineProblems(host: Host, outcomes: Outcome[]): string[] {
  const byRun = new Map<string, string[]>()
  for (const line of host.lines) {
    if (line.kind !== 'call' || typeof line.runId !== 'string') continue
    const list = byRun.get(line.runId) ?? []
    list.push(String(line.outcome))
    byRun.set(line.runId, list)
  }
  const problems: string[] = []
  for (const o of outcomes) {
    const lines = byRun.get(o.id) ?? []
    if (o.status === 503) {
      if (lines.length !== 0) problems.push(`${o.id}: answered 503 but logged ${JSON.stringify(lines)}`)
    } else if (o.status === 200) {
      const expected = o.body?.kind === 'error' ? o.body.code : 'ok'
      if (lines.length !== 1 || lines[0] !== expected) problems.push(`${o.id} (${o.kind}): answered ${expected}, logged ${JSON.stringify(lines)}`)
    } else if (o.kind === 'disconnect' && o.error === 'left') {
      // It may have left before the host read it; if it was read, it ended as cancelled.
      if (lines.length > 1 || (lines.length === 1 && lines[0] !== 'cancelled')) problems.push(`${o.id}: left, logged ${JSON.stringify(lines)}`)
    }
  }
  return problems
}

/**
 * The most calls the front held admitted at once, rebuilt from its `call` lines: each covers
 * [time - durationMs, time], from its admission (the same tick the invoke starts) to its
 * answer, inside the span its slot was taken (a slot frees only when its worker does). Shrunk
 * by 2 ms at both ends for the millisecond rounding of `time`, the count is a lower bound of
 * calls in flight: above the cap means the cap was broken.
 */
export function admittedOverlap(host: Host): number {
  const events: Array<[number, number]> = []
  for (const line of host.lines) {
    if (line.kind !== 'call' || typeof line.durationMs !== 'number' || typeof line.time !== 'string') continue
    const end = Date.parse(line.time) - 2
    const start = Date.parse(line.time) - line.durationMs + 2
    if (end > start) events.push([start, 1], [end, -1])
  }
  events.sort((a, b) => a[0] - b[0] || a[1] - b[1])
  let now = 0
  let max = 0
  for (const [, step] of events) {
    now += step
    max = Math.max(max, now)
  }
  return max
}
