// Prometheus metrics (issue 5): off by default; with KINDGI_PACK_METRICS_PORT they are served
// on their own port (0 picks one and the listening line says which), never on the protocol port.
import { afterEach, describe, expect, it } from 'vitest'
import { checkInvoke, invoke, request, spawnHost, type Host } from '../helpers/host.js'

let hosts: Host[] = []
afterEach(async () => {
  await Promise.all(hosts.map((h) => h.stop()))
  hosts = []
})

async function withMetrics(env: Record<string, string | undefined> = {}): Promise<{ host: Host; metricsUrl: string }> {
  const host = await spawnHost({ env: { KINDGI_PACK_METRICS_PORT: '0', ...env } })
  hosts.push(host)
  const listening = host.lines.find((l) => l.kind === 'listening')!
  expect(listening.metricsPort).toEqual(expect.any(Number))
  expect(listening.metricsPort).not.toBe(listening.port)
  return { host, metricsUrl: `http://127.0.0.1:${listening.metricsPort}` }
}

async function scrape(metricsUrl: string): Promise<string> {
  const res = await fetch(`${metricsUrl}/metrics`)
  expect(res.status).toBe(200)
  expect(res.headers.get('content-type')).toContain('text/plain')
  return res.text()
}

/** The value of one sample, found by its exact name and labels as prom-client writes them. */
function sample(text: string, series: string): number | undefined {
  const line = text.split('\n').find((l) => l.startsWith(`${series} `))
  return line === undefined ? undefined : Number(line.slice(series.length + 1))
}

describe('metrics are off by default', () => {
  it('the listening line has no metricsPort and the protocol port answers 404 for /metrics', async () => {
    const host = await spawnHost()
    hosts.push(host)
    expect(host.lines.find((l) => l.kind === 'listening')).not.toHaveProperty('metricsPort')
    expect(await request(host, '/metrics', { token: null })).toMatchObject({ status: 404, body: { error: 'No route /metrics' } })
  })
})

describe('calls are counted by target, id and outcome, with their durations', () => {
  it('ok, error outcomes and a tool the pack does not have (its id is not made a label)', async () => {
    const { host, metricsUrl } = await withMetrics()
    await invoke(host, 'echo', { a: 1 })
    await invoke(host, 'echo', { a: 2 })
    await invoke(host, 'throws')
    await invoke(host, 'no-such-tool-7f3a')
    await checkInvoke(host, 'threshold', { min: 1 }, {})

    const text = await scrape(metricsUrl)
    expect(sample(text, 'kindgi_pack_calls_total{target="tool",id="echo",outcome="ok"}')).toBe(2)
    expect(sample(text, 'kindgi_pack_calls_total{target="tool",id="throws",outcome="handler-throw"}')).toBe(1)
    expect(sample(text, 'kindgi_pack_calls_total{target="tool",id="",outcome="tool-not-in-pack"}')).toBe(1)
    expect(text).not.toContain('no-such-tool-7f3a')
    expect(text).toMatch(/^kindgi_pack_calls_total\{target="check",id="threshold",outcome="[a-z-]+"\} 1$/m)
    expect(sample(text, 'kindgi_pack_call_duration_seconds_count{target="tool",id="echo",outcome="ok"}')).toBe(2)
    expect(sample(text, 'kindgi_pack_call_duration_seconds_bucket{le="+Inf",target="tool",id="echo",outcome="ok"}')).toBe(2)
    expect(sample(text, 'kindgi_pack_calls_in_flight')).toBe(0)
  })
})

describe('workers are reported by posture, and replacements by reason', () => {
  it('a worker that exits mid-call counts one crash replacement', async () => {
    const { host, metricsUrl } = await withMetrics()
    await invoke(host, 'exit')
    await host.waitFor('worker-replaced', (l) => l.reason === 'crash')
    const text = await scrape(metricsUrl)
    expect(sample(text, 'kindgi_pack_worker_replacements_total{reason="crash"}')).toBe(1)
    for (const posture of ['none', 'context-isolated', 'strict']) {
      expect(sample(text, `kindgi_pack_workers{posture="${posture}"}`)).toEqual(expect.any(Number))
    }
    expect(sample(text, 'kindgi_pack_workers{posture="none"}')).toBeGreaterThan(0)
  })
})

describe('503s are counted by reason', () => {
  it('an invoke refused for a missing required env name counts as missing-env', async () => {
    const { host, metricsUrl } = await withMetrics({ FIXTURE_REQUIRED: undefined })
    expect((await invoke(host, 'echo')).status).toBe(503)
    expect((await invoke(host, 'echo')).status).toBe(503)
    const text = await scrape(metricsUrl)
    expect(sample(text, 'kindgi_pack_invokes_refused_total{reason="missing-env"}')).toBe(2)
    expect(text).not.toMatch(/^kindgi_pack_calls_total\{/m)
  })
})

describe('the metrics port serves GET /metrics and nothing else', () => {
  it('404 for another path, 405 for another method; the protocol port still 404s /metrics', async () => {
    const { host, metricsUrl } = await withMetrics()
    const other = await fetch(`${metricsUrl}/v1/info`)
    expect(other.status).toBe(404)
    expect(await other.json()).toEqual({ error: 'No route /v1/info' })
    expect((await fetch(`${metricsUrl}/metrics`, { method: 'POST' })).status).toBe(405)
    expect(await request(host, '/metrics')).toMatchObject({ status: 404, body: { error: 'No route /metrics' } })
  })
})
