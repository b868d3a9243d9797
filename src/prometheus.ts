// The Prometheus registry behind the metrics observer (KINDGI_PACK_METRICS_PORT). Imported
// only when metrics are on: prom-client adds to every start-up otherwise (bench/PROFILE.md, design figures).
import { Counter, Gauge, Histogram, Registry, collectDefaultMetrics } from 'prom-client'
import type { Metrics, MetricsSources } from './metrics.js'

export type PrometheusMetrics = Metrics & { registry: Registry }

/** Seconds, from a fast tool call to the 120 s default deadline. */
const DURATION_BUCKETS = [0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 120]
const POSTURES = ['none', 'context-isolated', 'strict']

export function createPrometheusMetrics(sources: MetricsSources): PrometheusMetrics {
  const registry = new Registry()
  collectDefaultMetrics({ register: registry })
  const calls = new Counter({
    name: 'kindgi_pack_calls_total',
    help: 'Invokes that ended in a call log line, by target (tool|check), id and outcome ("ok" or the error code)',
    labelNames: ['target', 'id', 'outcome'] as const,
    registers: [registry],
  })
  const durations = new Histogram({
    name: 'kindgi_pack_call_duration_seconds',
    help: 'Time from receiving an invoke to its call log line, by target, id and outcome',
    labelNames: ['target', 'id', 'outcome'] as const,
    buckets: DURATION_BUCKETS,
    registers: [registry],
  })
  const refusals = new Counter({
    name: 'kindgi_pack_invokes_refused_total',
    help: 'Invokes answered 503 (the call never reached a worker), by reason',
    labelNames: ['reason'] as const,
    registers: [registry],
  })
  const replacements = new Counter({
    name: 'kindgi_pack_worker_replacements_total',
    help: 'Workers terminated or dead and replaced, by reason',
    labelNames: ['reason'] as const,
    registers: [registry],
  })
  new Gauge({
    name: 'kindgi_pack_calls_in_flight',
    help: 'Invokes received and not yet answered',
    registers: [registry],
    collect() {
      this.set(sources.callsInFlight())
    },
  })
  new Gauge({
    name: 'kindgi_pack_workers',
    help: "Worker threads of the served pack (none, context-isolated) and its strict calls' processes, spares included (strict), by posture",
    labelNames: ['posture'] as const,
    registers: [registry],
    collect() {
      const counts = sources.workersByPosture()
      for (const posture of POSTURES) this.set({ posture }, counts[posture] ?? 0)
    },
  })
  // prom-client's process_resident_memory_bytes reads /proc, which the permission model
  // closes under strict (it then reads 0); libuv's RSS works in every posture.
  new Gauge({
    name: 'kindgi_pack_resident_memory_bytes',
    help: 'Resident set size of the front process, in bytes (pack processes not included)',
    registers: [registry],
    collect() {
      this.set(process.memoryUsage.rss())
    },
  })
  return {
    registry,
    callFinished(call) {
      const labels = { target: call.target ?? '', id: call.id ?? '', outcome: call.outcome }
      calls.inc(labels)
      durations.observe(labels, call.durationMs / 1000)
    },
    refused: (reason) => refusals.inc({ reason }),
    workerReplaced: (reason) => replacements.inc({ reason }),
  }
}
