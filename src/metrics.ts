// What the front reports about calls, refusals and workers: a small observer. With metrics
// off the front holds NO_METRICS, whose methods do nothing, so the hot path pays one empty
// call and prom-client is never even loaded (prometheus.ts is imported only when needed).

/** Why an invoke was answered 503 (the call never reached a worker). */
export type RefusalReason = 'draining' | 'missing-env' | 'not-ready' | 'overloaded'

export type CallObserved = {
  target: 'tool' | 'check' | undefined
  /** The tool or check id when the served pack has it, else undefined (keeps label values bounded). */
  id: string | undefined
  outcome: string
  durationMs: number
}

export type Metrics = {
  callFinished(call: CallObserved): void
  refused(reason: RefusalReason): void
  workerReplaced(reason: string): void
}

export const NO_METRICS: Metrics = { callFinished() {}, refused() {}, workerReplaced() {} }

/** Gauges read at scrape time, from whatever is served then (--watch swaps it). */
export type MetricsSources = {
  callsInFlight(): number
  workersByPosture(): Record<string, number>
}
