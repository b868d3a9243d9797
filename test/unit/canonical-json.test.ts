// The index's canonical form (pack-index.md "Determinism"), what `check` reports against it,
// and what `check --fix` writes.
import { describe, expect, it } from 'vitest'
import { canonicalIndex, canonicalProblems, stringifySorted } from '../../src/cli/canonical-json.js'

const tool = (id: string, version = '1.0.0') => ({ id, input: {}, modulePath: `tools/${id}.js`, output: {}, version })
const index = {
  agents: [],
  artifactVersion: 'a',
  env: { optional: ['B_NAME'], required: ['A_NAME'] },
  flows: [],
  guardrails: [],
  packId: 'p',
  packVersion: '1.0.0',
  publishedAt: '2026-11-30T10:00:00.000Z',
  tools: [tool('a'), tool('b')],
  v: 1,
}

describe('the canonical text', () => {
  it('sorts keys at every level by code unit, indents by two spaces and ends with a newline', () => {
    const text = canonicalIndex({ v: 1, b: { z: 1, Z: 2, a: [{ y: true, x: null }] } })
    expect(text).toBe('{\n  "b": {\n    "Z": 2,\n    "a": [\n      {\n        "x": null,\n        "y": true\n      }\n    ],\n    "z": 1\n  },\n  "v": 1\n}\n')
  })
  it('puts integer-like keys in code-unit order too ("10" before "9"), which JSON.stringify cannot', () => {
    expect(stringifySorted({ 9: 'nine', 10: 'ten', a: 'a' })).toBe('{\n  "10": "ten",\n  "9": "nine",\n  "a": "a"\n}')
  })
  it('sorts tools, guardrails, agents, flows and blocks by id, keeping the order of versions of one id', () => {
    const parsed = JSON.parse(canonicalIndex({ ...index, tools: [tool('b', '2.0.0'), tool('a'), tool('b', '1.0.0')], blocks: [{ id: 'z' }, { id: 'y' }] }))
    expect(parsed.tools.map((t: { id: string; version: string }) => `${t.id}@${t.version}`)).toEqual(['a@1.0.0', 'b@2.0.0', 'b@1.0.0'])
    expect(parsed.blocks.map((b: { id: string }) => b.id)).toEqual(['y', 'z'])
  })
  it("sorts env.required and env.optional but no other list (a schema's required keeps its order)", () => {
    const parsed = JSON.parse(
      canonicalIndex({ ...index, env: { required: ['Z', 'A'], optional: [] }, tools: [{ ...tool('a'), input: { required: ['z', 'a'] } }] }),
    )
    expect(parsed.env.required).toEqual(['A', 'Z'])
    expect(parsed.tools[0].input.required).toEqual(['z', 'a'])
  })
  it('writes integral numbers without a fraction', () => {
    expect(canonicalIndex(JSON.parse('{"n": 1.0, "m": 2.50}'))).toBe('{\n  "m": 2.5,\n  "n": 1\n}\n')
  })
  it('is a fixed point: the canonical text of canonical text is itself', () => {
    const once = canonicalIndex({ ...index, tools: [tool('b'), tool('a')] })
    expect(canonicalIndex(JSON.parse(once))).toBe(once)
  })
})

describe('problems against the canonical form', () => {
  it('a canonical file has none', () => {
    const text = canonicalIndex(index)
    expect(canonicalProblems(text, JSON.parse(text))).toEqual([])
  })
  it('a list out of order is named at the first entry out of place', () => {
    const unsorted = { ...index, tools: [tool('a'), tool('c'), tool('b')] }
    const text = `${JSON.stringify(unsorted, null, 2)}\n`
    expect(canonicalProblems(text, unsorted)).toEqual([{ path: '/tools/2', message: expect.stringContaining('"b" comes after "c"') }])
  })
  it('an env list out of order is named too', () => {
    const unsorted = { ...index, env: { optional: [], required: ['Z', 'A'] } }
    expect(canonicalProblems(`${JSON.stringify(unsorted, null, 2)}\n`, unsorted)).toEqual([
      { path: '/env/required/1', message: expect.stringContaining('not sorted') },
    ])
  })
  it('each object with unsorted keys is named by its path, five at most, then counted', () => {
    const few = { ...index, tools: [{ ...tool('a'), input: { type: 'object', properties: {} } }] }
    expect(canonicalProblems(`${JSON.stringify(few, null, 2)}\n`, few)).toEqual([
      { path: '/tools/0/input', message: expect.stringContaining('keys are not sorted') },
    ])
    const many = { ...index, tools: 'abcdefg'.split('').map((id) => ({ output: {}, id })) }
    const problems = canonicalProblems(`${JSON.stringify(many, null, 2)}\n`, many)
    expect(problems.map((p) => p.path)).toEqual(['/tools/0', '/tools/1', '/tools/2', '/tools/3', '/tools/4', ''])
    expect(problems[5]!.message).toContain('2 more objects')
  })
  it('a layout difference (indent, missing newline, a fraction) is named by its line', () => {
    const text = canonicalIndex(index)
    expect(canonicalProblems(text.trimEnd(), index)).toEqual([{ path: '', message: expect.stringMatching(/^line \d+ is not in canonical layout/) }])
    expect(canonicalProblems(`${JSON.stringify(index, null, 4)}\n`, index)[0]!.message).toMatch(/^line 2 /)
    expect(canonicalProblems(text.replace('"v": 1', '"v": 1.0'), index)[0]!.message).toMatch(/^line \d+ /)
  })
  it('every problem says that --fix rewrites it', () => {
    const unsorted = { ...index, tools: [tool('b'), tool('a')] }
    for (const problem of canonicalProblems(JSON.stringify(unsorted), unsorted)) expect(problem.message).toContain('check --fix')
  })
})
