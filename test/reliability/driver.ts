// Runs generated wire cases against live hosts and judges every answer with the oracle;
// polls /healthz on its own connection all the while. Shared by the `npm test` part and
// the soak, which differ only in how many cases and how long.
import fc from 'fast-check'
import type { Host } from '../helpers/host.js'
import type { WireCase } from './generators.js'
import { answerProblem, bodyOf, HTTP_STATUSES } from './oracle.js'
import { exchange } from './wire.js'

export type Hosts = Record<WireCase['host'], Host>

export type Tally = { cases: number; requests: number; answers: number; byStatus: Record<string, number>; closedByClient: number }

export function newTally(): Tally {
  return { cases: 0, requests: 0, answers: 0, byStatus: {}, closedByClient: 0 }
}

/** How long one exchange may take before it counts as a hang (a fuzzed call's deadline is 1 s). */
export const EXCHANGE_TIMEOUT_MS = 15_000

/** Sends one case and returns what went wrong with its answers, or undefined. */
export async function runCase(c: WireCase, hosts: Hosts, tally: Tally): Promise<string | undefined> {
  const host = hosts[c.host]
  const methods = c.requests.map((r) => r.method)
  const ex = await exchange(c.pieces, { port: host.port, methods, timeoutMs: EXCHANGE_TIMEOUT_MS })
  tally.cases++
  tally.requests += c.requests.length
  tally.answers += ex.answers.length
  if (c.clientQuits) tally.closedByClient++
  for (const a of ex.answers) tally.byStatus[a.status] = (tally.byStatus[a.status] ?? 0) + 1
  if (host.proc.exitCode !== null) return `the host exited (${host.proc.exitCode})`
  if (ex.error !== undefined) return `socket error ${ex.error}`
  if (ex.garbage !== undefined) return `bytes that are not an HTTP answer: ${JSON.stringify(ex.garbage)}`
  if (ex.answers.length > c.requests.length && !c.framingEdited) return `${ex.answers.length} answers to ${c.requests.length} requests`
  for (const [i, answer] of ex.answers.entries()) {
    // Past the requests sent: bytes a wrong Content-Length left over, parsed as a request of their own.
    const req = c.requests[i] ?? { method: 'POST', target: undefined }
    const problem = answerProblem(answer, req.method, req.target)
    if (problem !== undefined) return `answer ${i} (${req.method} ${req.target}): ${problem}`
    const expect = 'expect' in req ? req.expect : undefined
    if (expect === undefined) continue
    // At the cap, any invoke may be refused: that is a promise kept, not broken.
    if (answer.status === 503 && bodyOf(answer).error === 'overloaded') continue
    if (expect.status !== undefined && answer.status !== expect.status)
      return `answer ${i} (${req.method} ${req.target}): status ${answer.status}, expected ${expect.status}: ${answer.body.slice(0, 200)}`
    if (answer.status !== 200 || req.method === 'HEAD') continue
    const body = bodyOf(answer)
    // A fuzzed call may pass its deadline on a slow machine: a promise kept, not broken.
    if (body.code === 'deadline-exceeded' && expect.code === undefined) continue
    if (expect.code !== undefined && body.code !== expect.code) return `answer ${i}: code ${body.code}, expected ${expect.code}`
    if (expect.marker !== undefined && body.output?.marker !== expect.marker)
      return `answer ${i}: ${answer.body.slice(0, 200)}, expected marker ${expect.marker} (answers out of order?)`
  }
  if (c.clientQuits) return undefined
  if (ex.timedOut) return `no answer within ${EXCHANGE_TIMEOUT_MS} ms (${ex.answers.length} of ${c.requests.length})`
  if (ex.answers.length < c.requests.length) {
    const last = ex.answers.at(-1)
    const closing =
      last !== undefined && ((last.headers.connection?.[0] ?? '').toLowerCase() === 'close' || (HTTP_STATUSES as readonly number[]).includes(last.status))
    if (!closing) return `the connection closed after ${ex.answers.length} of ${c.requests.length} answers, without saying so`
  }
  return undefined
}

export type FuzzRun = { tally: Tally; failure?: string }

/** Runs `numRuns` generated cases (fewer if `timeLimitMs` passes first); a failure is shrunk and reported. */
export async function fuzz(arb: fc.Arbitrary<WireCase>, hosts: Hosts, options: { numRuns: number; timeLimitMs: number; seed?: number }): Promise<FuzzRun> {
  const tally = newTally()
  const details = await fc.check(
    fc.asyncProperty(arb, async (c) => {
      const problem = await runCase(c, hosts, tally)
      if (problem !== undefined) throw new Error(problem)
    }),
    { numRuns: options.numRuns, seed: options.seed, plugins: [fc.interruptAfterTimeLimit(options.timeLimitMs)], endOnFailure: false },
  )
  if (!details.failed) return { tally }
  const why = details.errorInstance instanceof Error ? details.errorInstance.message : String(details.errorInstance)
  const report = (fc.defaultReportMessage(details) ?? '').split('\n').map((l) => (l.length > 1_500 ? `${l.slice(0, 1_500)}… (${l.length} chars)` : l))
  return { tally, failure: `${why}\n${report.join('\n')}` }
}

export type HealthPoll = { polls: number; failures: string[]; maxMs: number }

/** Polls /healthz every `everyMs` until stopped; every answer must be a quick 200 {"status":"ok"}. */
export function pollHealth(host: Host, everyMs = 100): { stop(): Promise<HealthPoll> } {
  const result: HealthPoll = { polls: 0, failures: [], maxMs: 0 }
  let running = true
  const loop = (async () => {
    while (running) {
      const started = performance.now()
      try {
        const res = await fetch(`${host.url}/healthz`, { signal: AbortSignal.timeout(5_000) })
        const body = await res.text()
        if (res.status !== 200 || body !== '{"status":"ok"}') result.failures.push(`${res.status} ${body}`)
      } catch (err) {
        if (running) result.failures.push(String(err))
      }
      result.polls++
      result.maxMs = Math.max(result.maxMs, performance.now() - started)
      await new Promise((r) => setTimeout(r, everyMs))
    }
  })()
  return {
    async stop() {
      running = false
      await loop
      return result
    },
  }
}
