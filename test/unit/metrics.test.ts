// The metrics observer: every 503 reason gets its label, gauges read what is served at scrape
// time (so a --watch swap shows), and label values stay what the front passes.
import { describe, expect, it } from 'vitest'
import { notReady, refusalReason, type FrontState } from '../../src/http/front-state.js'
import { createPrometheusMetrics } from '../../src/prometheus.js'
import type { Serving } from '../../src/serving.js'

function sample(text: string, series: string): number | undefined {
  const line = text.split('\n').find((l) => l.startsWith(`${series} `))
  return line === undefined ? undefined : Number(line.slice(series.length + 1))
}

describe('503s by reason', () => {
  it('draining, missing env and not ready map to their labels, as notReady reports them', () => {
    const base = { config: { token: 't', tenantId: undefined, envCheck: 'strict' } } as unknown as FrontState
    const serving = (missingEnv: string[]) => ({ missingEnv }) as unknown as Serving
    const why = (state: Partial<FrontState>) => refusalReason(notReady({ ...base, draining: false, serving: serving([]), ...state })!)
    expect(why({ draining: true })).toBe('draining')
    expect(why({ serving: serving(['API_KEY']) })).toBe('missing-env')
    expect(why({ serving: undefined })).toBe('not-ready')
  })

  it('each reason is its own series', async () => {
    const metrics = createPrometheusMetrics({ callsInFlight: () => 0, workersByPosture: () => ({}) })
    for (const reason of ['draining', 'missing-env', 'not-ready', 'overloaded', 'overloaded'] as const) metrics.refused(reason)
    const text = await metrics.registry.metrics()
    expect(sample(text, 'kindgi_pack_invokes_refused_total{reason="draining"}')).toBe(1)
    expect(sample(text, 'kindgi_pack_invokes_refused_total{reason="missing-env"}')).toBe(1)
    expect(sample(text, 'kindgi_pack_invokes_refused_total{reason="not-ready"}')).toBe(1)
    expect(sample(text, 'kindgi_pack_invokes_refused_total{reason="overloaded"}')).toBe(2)
  })
})

describe('gauges are read at scrape time', () => {
  it('calls in flight and workers by posture follow their sources between scrapes', async () => {
    let inFlight = 3
    let workers: Record<string, number> = { none: 2, strict: 1 }
    const metrics = createPrometheusMetrics({ callsInFlight: () => inFlight, workersByPosture: () => workers })
    let text = await metrics.registry.metrics()
    expect(sample(text, 'kindgi_pack_calls_in_flight')).toBe(3)
    expect(sample(text, 'kindgi_pack_workers{posture="none"}')).toBe(2)
    expect(sample(text, 'kindgi_pack_workers{posture="context-isolated"}')).toBe(0)
    expect(sample(text, 'kindgi_pack_workers{posture="strict"}')).toBe(1)
    inFlight = 0
    workers = { 'context-isolated': 4 }
    text = await metrics.registry.metrics()
    expect(sample(text, 'kindgi_pack_calls_in_flight')).toBe(0)
    expect(sample(text, 'kindgi_pack_workers{posture="none"}')).toBe(0)
    expect(sample(text, 'kindgi_pack_workers{posture="context-isolated"}')).toBe(4)
    expect(sample(text, 'kindgi_pack_resident_memory_bytes')).toBeGreaterThan(0)
  })
})

describe('calls', () => {
  it('an id the pack does not have is counted under an empty id; durations are observed in seconds', async () => {
    const metrics = createPrometheusMetrics({ callsInFlight: () => 0, workersByPosture: () => ({}) })
    metrics.callFinished({ target: 'tool', id: 'echo', outcome: 'ok', durationMs: 30 })
    metrics.callFinished({ target: undefined, id: undefined, outcome: 'malformed-message', durationMs: 1 })
    const text = await metrics.registry.metrics()
    expect(sample(text, 'kindgi_pack_call_duration_seconds_bucket{le="0.025",target="tool",id="echo",outcome="ok"}')).toBe(0)
    expect(sample(text, 'kindgi_pack_call_duration_seconds_bucket{le="0.05",target="tool",id="echo",outcome="ok"}')).toBe(1)
    expect(sample(text, 'kindgi_pack_calls_total{target="",id="",outcome="malformed-message"}')).toBe(1)
  })
})
