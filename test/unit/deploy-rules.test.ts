// What a deploy refuses beyond the boot checks, and boot problems placed at their paths.
import { describe, expect, it } from 'vitest'
import { locateBootProblem } from '../../src/cli/boot-problems.js'
import { deployProblems } from '../../src/cli/deploy-rules.js'
import type { PackIndex } from '../../src/pack-index.js'

const tool = { id: 't', version: '1.0.0', description: 'A tool.', modulePath: 'tools/t.js', input: {}, output: {} }
const guardrail = { id: 'g', kind: 'pack-check', action: {}, checkModulePath: 'checks/g.js' }
const pack = (extra: Record<string, unknown>) =>
  ({
    v: 1,
    packId: 'p',
    packVersion: '1.0.0',
    artifactVersion: 'a',
    publishedAt: '2026-11-30T10:00:00.000Z',
    tools: [],
    guardrails: [],
    agents: [],
    flows: [],
    ...extra,
  }) as unknown as PackIndex
const problems = (extra: Record<string, unknown>, builtInChecks: string[] = []) => deployProblems(pack(extra), { builtInChecks })

describe('duplicate ids', () => {
  it('a tool version listed twice is a problem at the second; two versions of one tool are not', () => {
    expect(problems({ tools: [tool, { ...tool, version: '2.0.0' }] })).toEqual([])
    expect(problems({ tools: [tool, { ...tool, version: '2.0.0' }, tool] })).toEqual([{ path: '/tools/2', message: 'id "t" at version 1.0.0 is listed twice' }])
  })
  it('a guardrail or block id listed twice is a problem', () => {
    const block = { id: 'b', version: '1.0.0', kind: 'prompt', content: {}, modulePath: 'blocks/b.json' }
    expect(problems({ guardrails: [guardrail, guardrail], blocks: [block, { ...block, version: '2.0.0' }] })).toEqual([
      { path: '/guardrails/1', message: 'id "g" is listed twice' },
      { path: '/blocks/1', message: 'id "b" is listed twice' },
    ])
  })
})

describe('tools, as the runtime will judge them', () => {
  it("every ToolManifest rule applies, at the tool's index path", () => {
    expect(problems({ tools: [tool, { ...tool, id: 'u', version: '1', limits: { memMB: 0, cpuMs: 5 } }] })).toEqual([
      { path: '/tools/1/version', message: '"1" is not major.minor.patch' },
      { path: '/tools/1/limits/memMB', message: '0 is not an integer >= 1' },
    ])
  })
  it('declarative tools are judged too, though the host loads nothing for them', () => {
    expect(problems({ tools: [{ ...tool, sandbox: 'jail', spec: { kind: 'http', method: 'GET', urlTemplate: 'https://x' } }] }).map((p) => p.path)).toEqual([
      '/tools/0/sandbox',
    ])
  })
})

describe('guardrails', () => {
  it('sandbox, limits and network.kind take the values tools do; limits may name only one of memMB, cpuMs', () => {
    expect(problems({ guardrails: [{ ...guardrail, limits: { memMB: 32 } }] })).toEqual([])
    expect(problems({ guardrails: [{ ...guardrail, sandbox: 'jail', limits: { cpuMs: -1 }, network: { kind: 'lan' } }] }).map((p) => p.path)).toEqual([
      '/guardrails/0/sandbox',
      '/guardrails/0/limits/cpuMs',
      '/guardrails/0/network/kind',
    ])
  })
  it('a guardrail naming a check the index marks built-in elsewhere, without checkBuiltIn, is a problem', () => {
    const builtIn = { ...guardrail, id: 'g1', checkId: 'pii', checkBuiltIn: true }
    const shadow = { ...guardrail, id: 'g2', checkId: 'pii' }
    expect(problems({ guardrails: [builtIn, shadow] })).toEqual([
      {
        path: '/guardrails/1/checkBuiltIn',
        message: 'is missing: "pii" is a built-in check, so without checkBuiltIn: true checks/g.js is loaded as its check',
      },
    ])
  })
  it('so is one naming a check given with --built-in-check, by checkId or by its own id', () => {
    expect(
      problems(
        {
          guardrails: [
            { ...guardrail, checkId: 'toxicity' },
            { ...guardrail, id: 'pii' },
          ],
        },
        ['toxicity', 'pii'],
      ).map((p) => p.path),
    ).toEqual(['/guardrails/0/checkBuiltIn', '/guardrails/1/checkBuiltIn'])
    expect(problems({ guardrails: [guardrail] }, ['toxicity'])).toEqual([])
  })
})

describe('env and blocks', () => {
  it("env names under KINDGI_ are Kindgi's, and a name is required or optional, not both", () => {
    expect(problems({ env: { required: ['KINDGI_X', 'OWN'], optional: ['OWN'] } })).toEqual([
      { path: '/env/required/0', message: '"KINDGI_X" is under the reserved prefix KINDGI_: those names are Kindgi\'s own' },
      { path: '/env/optional/0', message: '"OWN" is in env.required too; a name is one or the other' },
    ])
  })
  it('a block version is plain major.minor.patch', () => {
    expect(problems({ blocks: [{ id: 'b', version: 'v2', kind: 'prompt', content: {}, modulePath: 'b.json' }] })).toEqual([
      { path: '/blocks/0/version', message: '"v2" is not major.minor.patch' },
    ])
  })
})

describe('boot problems at their paths', () => {
  const index = pack({
    tools: [tool, { ...tool, id: 'http', modulePath: 'tools/shared.js', spec: { kind: 'http' } }, { ...tool, id: 'u', modulePath: 'tools/shared.js' }],
    guardrails: [
      { ...guardrail, checkId: 'pii', checkBuiltIn: true },
      { ...guardrail, id: 'h', checkModulePath: 'checks/h.js' },
    ],
  })
  it.each([
    ['Index /tools/0/sandbox: "jail" is not none, context-isolated or strict', '/tools/0/sandbox'],
    ["Index (root): must have required property 'packId'", ''],
    ['Missing module: tools/shared.js', '/tools/2/modulePath'],
    ['Missing module: checks/h.js', '/guardrails/1/checkModulePath'],
    ['Module tools/t.js threw while loading: Error: no database', '/tools/0/modulePath'],
    ['Module tools/shared.js exports no handler for tool "u" (a default function, or handler/run)', '/tools/2'],
    ['Module checks/h.js exports no check for "h" (evaluate, default or check)', '/guardrails/1'],
    ['Tool "t" output schema does not compile: schema is invalid', '/tools/0/output'],
    ['Check "h" config schema does not compile: schema is invalid', '/guardrails/1/configSchema'],
    ['Modules of tools/t.js did not finish loading within 30000 ms', ''],
  ])('%s → "%s"', (text, path) => {
    const located = locateBootProblem(text, index)
    expect(located.path).toBe(path)
    expect(located.message).toBe(text.startsWith('Index ') ? text.replace(/^Index \S+: /, '') : text)
  })
})
