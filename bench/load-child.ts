// The load generator's own process: runs autocannon (its programmatic API) for each spec the
// benchmark sends over IPC and answers the counts and latencies; a paced spec is sent evenly
// spaced by bench/paced.ts instead. Latencies are recorded
// here from each response at microsecond resolution (autocannon's histogram keeps whole ms).
import { createRequire } from 'node:module'
import { pacedCalls } from './paced.js'
import { percentileSorted } from './stats.js'
import type { LoadResult, LoadSpec, ToLoad, FromLoad } from './load.js'

type Instance = { on(event: 'response', listener: (client: unknown, status: number, bytes: number, ms: number) => void): void }
type Autocannon = (options: Record<string, unknown>, done: (err: Error | null, result: Record<string, unknown>) => void) => Instance

const autocannon = createRequire(import.meta.url)('autocannon') as Autocannon

function cannon(spec: LoadSpec, amount: number, onResponse?: (status: number, ms: number) => void): Promise<Record<string, unknown>> {
  return new Promise((resolve, reject) => {
    const instance = autocannon(
      {
        url: `${spec.url}/v1/invoke`,
        method: 'POST',
        headers: { 'content-type': 'application/json', 'kindgi-pack-token': spec.token },
        body: spec.body,
        connections: spec.connections,
        amount,
        timeout: 30,
        // autocannon notices a finished `amount` only on its sampling tick (1 s by default).
        sampleInt: 10,
      },
      (err, result) => (err ? reject(err) : resolve(result)),
    )
    if (onResponse !== undefined) instance.on('response', (_client, status, _bytes, ms) => onResponse(status, ms))
  })
}

/**
 * Keeps `connections` callers busy for about `seconds`. autocannon's own duration mode ends by
 * destroying its sockets with calls in flight: the host answers those `cancelled` and may
 * terminate the workers running them (a pool that keeps shrinking and regrowing is not what
 * we want to measure). So the load runs in chunks of whole calls per caller (autocannon's
 * `amount`), each sized from the last one's pace to last up to a second, and a chunk ends
 * only when its last call is answered.
 */
async function keepBusy(spec: LoadSpec, seconds: number, onResponse?: (status: number, ms: number) => void): Promise<{ errors: number; timeouts: number }> {
  if (spec.overallRate !== undefined) return { ...(await pacedCalls(spec, seconds, spec.overallRate, onResponse)), timeouts: 0 }
  const deadline = performance.now() + seconds * 1000
  let perCaller = 1
  let errors = 0
  let timeouts = 0
  while (performance.now() < deadline) {
    const started = performance.now()
    const result = await cannon(spec, spec.connections * perCaller, onResponse)
    errors += Number(result.errors ?? 0)
    timeouts += Number(result.timeouts ?? 0)
    const tookMs = Math.max(1, performance.now() - started)
    const leftMs = deadline - performance.now()
    if (leftMs <= 0) break
    const wanted = Math.min(leftMs, 1000)
    perCaller = Math.max(1, Math.min(100_000, Math.floor((perCaller * wanted) / tookMs)))
  }
  return { errors, timeouts }
}

/**
 * Waits until the server has no call left over from a previous run: autocannon drops its
 * connections at the end of a run, the host answers those calls `cancelled` but frees their
 * slots only when their workers are free (docs/spec/CONTRACT.md §6), so the next run could meet 503s or
 * a queue. `barrierBody` calls, as many at once as the cap, must all be admitted twice in a row.
 */
async function drain(spec: LoadSpec): Promise<number> {
  const started = performance.now()
  let clean = 0
  for (let attempt = 0; attempt < 200 && clean < 2; attempt++) {
    const statuses = await Promise.all(
      Array.from({ length: spec.barrierCalls }, () =>
        fetch(`${spec.url}/v1/invoke`, {
          method: 'POST',
          headers: { 'content-type': 'application/json', 'kindgi-pack-token': spec.token },
          body: spec.barrierBody,
        }).then(
          async (res) => {
            await res.arrayBuffer()
            return res.status
          },
          () => 0,
        ),
      ),
    )
    clean = statuses.every((s) => s === 200) ? clean + 1 : 0
    if (clean === 0) await new Promise((r) => setTimeout(r, 50))
  }
  return performance.now() - started
}

async function run(spec: LoadSpec, started: () => void): Promise<LoadResult> {
  await drain(spec)
  if (spec.warmupS > 0) {
    await keepBusy(spec, spec.warmupS)
    await drain(spec)
  }
  const latenciesUs: number[] = []
  let ok = 0
  let other = 0
  started()
  const t0 = performance.now()
  const result = await keepBusy(spec, spec.durationS, (status, ms) => {
    if (status === 200) {
      ok++
      latenciesUs.push(ms * 1000)
    } else other++
  })
  const elapsedS = (performance.now() - t0) / 1000
  const sorted = Float64Array.from(latenciesUs).sort()
  let sum = 0
  for (const x of sorted) sum += x
  return {
    requests: ok,
    non200: other,
    errors: result.errors,
    timeouts: result.timeouts,
    elapsedS,
    rps: ok / elapsedS,
    p50Us: percentileSorted(sorted, 50),
    p90Us: percentileSorted(sorted, 90),
    p99Us: percentileSorted(sorted, 99),
    maxUs: sorted.length > 0 ? (sorted[sorted.length - 1] as number) : Number.NaN,
    meanUs: sorted.length > 0 ? sum / sorted.length : Number.NaN,
  }
}

process.on('message', (message: ToLoad) => {
  if (message.type === 'exit') process.exit(0)
  const send = (m: FromLoad) => process.send!(m)
  run(message.spec, () => send({ type: 'started', id: message.id })).then(
    (result) => send({ type: 'done', id: message.id, result }),
    (err: Error) => send({ type: 'failed', id: message.id, error: err.message }),
  )
})
process.send!({ type: 'ready' } satisfies FromLoad)
