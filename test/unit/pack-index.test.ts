// Index checks at boot (docs/spec/CONTRACT.md §1, pack-index.md) and the entries they produce.
import { writeFileSync } from 'node:fs'
import { join } from 'node:path'
import { describe, expect, it } from 'vitest'
import { loadPackIndex } from '../../src/pack-index.js'
import { tempDirs } from '../helpers/temp-dir.js'

const tempDir = tempDirs()
const dir = tempDir('kph-index-')
writeFileSync(join(dir, 'tool.js'), 'export default () => ({})\n')

function write(index: unknown): string {
  const path = join(dir, `index-${Math.random().toString(36).slice(2)}.json`)
  writeFileSync(path, typeof index === 'string' ? index : JSON.stringify(index))
  return path
}

const base = {
  v: 1,
  packId: 'p',
  packVersion: '1.0.0',
  artifactVersion: 'a',
  publishedAt: '2026-11-30T10:00:00.000Z',
  tools: [],
  guardrails: [],
  agents: [],
  flows: [],
}
const tool = { id: 't', version: '1.0.0', modulePath: 'tool.js', input: {}, output: {} }

describe('reading the index', () => {
  it('an unreadable or unparsable file is "Cannot read the pack index: <why>"', () => {
    expect(loadPackIndex(join(dir, 'absent.json'), dir, 'none')).toMatchObject({
      kind: 'error',
      problems: [expect.stringMatching(/^Cannot read the pack index: /)],
    })
    expect(loadPackIndex(write('{nope'), dir, 'none')).toMatchObject({ kind: 'error', problems: [expect.stringMatching(/^Cannot read the pack index: /)] })
  })
  it('an index nested more than 256 levels deep is refused, saying where: it could not cross to the processes that run it', () => {
    let examples: unknown = 1
    for (let i = 0; i < 2_900; i++) examples = { a: examples }
    const deep = { ...base, tools: [{ ...tool, input: { type: 'object', examples: [examples] } }] }
    // Before stop 42 it loaded, and the spawner died decoding the probe that carried it.
    const refused = loadPackIndex(write(deep), dir, 'none')
    expect(refused.kind).toBe('error')
    expect(refused.problems).toHaveLength(1)
    expect(refused.problems[0]).toMatch(/^Index \/tools\/0\/input\/examples\/0\/a\/a\/.*…: nested more than 256 levels deep; no pack index needs that/)
    let within: unknown = 1
    for (let i = 0; i < 200; i++) within = { a: within }
    expect(loadPackIndex(write({ ...base, tools: [{ ...tool, input: { type: 'object', examples: [within] } }] }), dir, 'none').kind).toBe('ok')
  })
  it('an envelope other than v1 is refused before anything else', () => {
    expect(loadPackIndex(write({ v: 3 }), dir, 'none')).toEqual({ kind: 'error', problems: ['Index envelope v3 is not v1'] })
  })
  it('each violation of pack-index.md is its own problem', () => {
    const result = loadPackIndex(write({ ...base, packId: 5, tools: [{ id: 't' }] }), dir, 'none')
    expect(result.kind).toBe('error')
    expect(result.problems.length).toBeGreaterThanOrEqual(4)
  })
  it('hashes the file byte for byte', () => {
    const result = loadPackIndex(write(base), dir, 'none')
    expect(result).toMatchObject({ kind: 'ok', pack: { indexHash: expect.stringMatching(/^sha256:[0-9a-f]{64}$/) }, problems: [] })
  })
})

describe('entries', () => {
  it('a missing module is "Missing module: <modulePath as written>"', () => {
    const result = loadPackIndex(write({ ...base, tools: [{ ...tool, modulePath: 'gone/x.js' }] }), dir, 'none')
    expect(result.problems).toEqual(['Missing module: gone/x.js'])
  })
  it("raises a tool's posture to KINDGI_PACK_SANDBOX, never lowers it", () => {
    const index = write({ ...base, tools: [tool, { ...tool, id: 's', sandbox: 'strict' }] })
    const result = loadPackIndex(index, dir, 'context-isolated')
    if (result.kind !== 'ok') throw new Error('expected ok')
    expect(result.pack.entries.map((e) => [e.id, e.posture])).toEqual([
      ['t', 'context-isolated'],
      ['s', 'strict'],
    ])
  })
  it('refuses unknown postures, network kinds and limits that are not integers >= 1', () => {
    const index = write({ ...base, tools: [{ ...tool, sandbox: 'jail', network: { kind: 'some' }, limits: { memMB: 0, cpuMs: 1.5 } }] })
    expect(loadPackIndex(index, dir, 'none').problems).toHaveLength(4)
  })
  it('skips declarative tools and built-in checks; guardrails sharing a checkId are one check', () => {
    const guardrail = { id: 'g', kind: 'k', action: {}, checkModulePath: 'tool.js' }
    const index = write({
      ...base,
      tools: [tool, { ...tool, id: 'http', spec: { kind: 'http' } }],
      guardrails: [guardrail, { ...guardrail, id: 'g2', checkId: 'g' }, { ...guardrail, id: 'b', checkBuiltIn: true, checkModulePath: 'absent.js' }],
    })
    const result = loadPackIndex(index, dir, 'none')
    if (result.kind !== 'ok') throw new Error(JSON.stringify(result))
    expect(result.problems).toEqual([])
    expect(result.pack.entries.map((e) => e.key)).toEqual(['tool:t@1.0.0', 'check:g'])
    expect(result.pack.declarativeTools.get('http')).toBe('http')
  })
})
