// The calls the benchmark makes against bench/pack: one request body per case, built once.
// Pure: the bodies must pass the bench pack's schemas (the run checks each answer first).

export type CaseId = 'echo' | 'twenty-fields' | 'big-input' | 'check' | 'strict' | 'strict-none' | 'limits'

export type BenchCase = {
  id: CaseId
  /** What the table calls it. */
  label: string
  body: string
  /** The response kind a correct answer has. */
  expect: 'result' | 'check-result'
}

const ctx = { tenantId: 'bench-tenant', runId: 'bench-run' }

export function invokeBody(toolId: string, input: unknown): string {
  return JSON.stringify({ v: 2, kind: 'invoke', tool: { id: toolId }, input, ctx })
}

export function checkBody(checkId: string, config: object, trace: object): string {
  return JSON.stringify({ v: 2, kind: 'check-invoke', check: { id: checkId }, config, trace })
}

export const TWENTY_FIELDS = {
  name: 'Ana Lima',
  email: 'ana@example.com',
  createdAt: '2026-01-02T03:04:05Z',
  id: '3f0e7a52-8c0e-4c8f-9a51-2b1c4d5e6f70',
  homepage: 'https://example.com/ana',
  age: 37,
  score: 88.5,
  ratio: 0.25,
  active: true,
  role: 'editor',
  tags: ['a', 'b', 'c'],
  priority: 2,
  country: 'PT',
  zip: '12345',
  count: 7,
  limit: 20,
  verified: false,
  locale: 'en-US',
  notes: null,
  address: { street: '1 Main St', city: 'Lisbon' },
} as const

/** An input of records whose JSON is at least `bytes` long (100 KiB for the big-input case). */
export function bigInput(bytes: number): { records: Array<{ id: number; name: string; score: number; tags: string[] }> } {
  const records: Array<{ id: number; name: string; score: number; tags: string[] }> = []
  let size = '{"records":[]}'.length
  for (let id = 0; size < bytes; id++) {
    const record = { id, name: `record number ${id}`, score: ((id * 7919) % 1000) / 10, tags: ['alpha', 'beta', `t${id % 17}`] }
    size += JSON.stringify(record).length + (records.length > 0 ? 1 : 0)
    records.push(record)
  }
  return { records }
}

export const BIG_INPUT_BYTES = 100 * 1024

export function benchCases(): BenchCase[] {
  const message = { message: 'hello, bench' }
  return [
    { id: 'echo', label: 'echo', body: invokeBody('echo', message), expect: 'result' },
    { id: 'twenty-fields', label: '20-field input', body: invokeBody('twenty-fields', TWENTY_FIELDS), expect: 'result' },
    { id: 'big-input', label: '100 KiB input', body: invokeBody('big-input', bigInput(BIG_INPUT_BYTES)), expect: 'result' },
    {
      id: 'check',
      label: 'check',
      body: checkBody('bench.max-length', { maxLength: 2000 }, { finalAnswer: 'A short and calm final answer.' }),
      expect: 'check-result',
    },
    { id: 'strict', label: 'strict posture', body: invokeBody('echo-strict', message), expect: 'result' },
    // Network none adds the network guard to a strict call's process.
    { id: 'strict-none', label: 'strict, network none', body: invokeBody('echo-strict-none', message), expect: 'result' },
    { id: 'limits', label: 'memMB/cpuMs limits', body: invokeBody('echo-limits', message), expect: 'result' },
  ]
}
