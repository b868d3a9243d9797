// The load generator's own process: runs autocannon (its programmatic API) for each spec the
// benchmark sends over IPC and answers the counts and latencies. Latencies are recorded
// here from each response at microsecond resolution (autocannon's histogram keeps whole ms).
import { createRequire } from 'node:module'
import { percentileSorted } from './stats.js'
import type { LoadResult, LoadSpec, ToLoad, FromLoad } from './load.js'

type Instance = { on(event: 'response', listener: (client: unknown, status: number, bytes: number, ms: number) => void): void }
type Autocannon = (options: Record<string, unknown>, done: (err: Error | null, result: Record<string, unknown>) => void) => Instance

const autocannon = createRequire(import.meta.url)('autocannon') as Autocannon

function cannon(spec: LoadSpec, seconds: number, onResponse?: (status: number, ms: number) => void): Promise<Record<string, unknown>> {
  return new Promise((resolve, reject) => {
    const instance = autocannon(
      {
        url: `${spec.url}/v1/invoke`,
        method: 'POST',
        headers: { 'content-type': 'application/json', 'kindgi-pack-token': spec.token },
        body: spec.body,
        connections: spec.connections,
        duration: seconds,
        overallRate: spec.overallRate,
        timeout: 30,
      },
      (err, result) => (err ? reject(err) : resolve(result)),
    )
    if (onResponse !== undefined) instance.on('response', (_client, status, _bytes, ms) => onResponse(status, ms))
  })
}

/**
 * Waits until the server has no call left over from a previous run: autocannon drops its
 * connections at the end of a run, the host answers those calls `cancelled` but frees their
 * slots only when their workers are free (CONTRACT §6), so the next run could meet 503s or
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
          async (res) => (await res.arrayBuffer(), res.status),
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
    await cannon(spec, spec.warmupS)
    await drain(spec)
  }
  const latenciesUs: number[] = []
  let ok = 0
  let other = 0
  started()
  const t0 = performance.now()
  const result = await cannon(spec, spec.durationS, (status, ms) => {
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
    errors: Number(result.errors ?? 0),
    timeouts: Number(result.timeouts ?? 0),
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
