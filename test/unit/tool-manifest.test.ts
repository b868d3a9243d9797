// ToolManifests from index entries (the POST /v1/tools body) and the spec's rules for them.
import { writeFileSync } from 'node:fs'
import { join } from 'node:path'
import { describe, expect, it } from 'vitest'
import { buildManifest, manifestProblems, manifestsFromIndex, type ToolManifest } from '../../src/cli/tool-manifest.js'
import type { IndexTool, PackIndex } from '../../src/pack-index.js'
import { tempDirs } from '../helpers/temp-dir.js'

const PROJECT = '2489e9ad-2ee2-4e00-8ec9-32d5f69181c0'
const base = {
  v: 1,
  packId: 'acme',
  packVersion: '1.0.0',
  artifactVersion: '20261130.2',
  publishedAt: '2026-11-30T10:00:00.000Z',
  tools: [],
  guardrails: [],
  agents: [],
  flows: [],
}
const tool: IndexTool = {
  id: 'acme.echo',
  version: '1.0.0',
  description: 'Echoes.',
  modulePath: 'tools/echo.js',
  input: { type: 'object' },
  output: { type: 'object' },
}
const index = { ...base, tools: [tool] } as unknown as PackIndex

const everything = {
  effects: [{ kind: 'writes', resource: 'ledger' }],
  needs: [{ name: 'ledger', optional: true }],
  needsSpec: { env: { LEDGER_URL: {} }, secrets: { 'ledger-key': {} }, connections: { mail: { app: 'google', permissions: ['gmail.send'], as: 'person' } } },
  sandbox: 'strict',
  limits: { memMB: 64, cpuMs: 500 },
  network: { kind: 'none' },
  mutating: false,
  needsApprovalWhenUnattended: true,
  pauses: true,
  storesFiles: true,
  readsFiles: true,
  resultIsOutsideData: true,
}

describe('building a manifest', () => {
  it('carries id, projectId, description, version, input and output', () => {
    expect(buildManifest(tool, index, { projectId: PROJECT })).toEqual({
      id: 'acme.echo',
      projectId: PROJECT,
      description: 'Echoes.',
      version: '1.0.0',
      input: { type: 'object' },
      output: { type: 'object' },
    })
  })
  it('carries every optional field the index has, as it is, and none it lacks', () => {
    const manifest = buildManifest({ ...tool, ...everything }, index, { projectId: PROJECT })
    expect(manifest).toEqual({ ...buildManifest(tool, index, { projectId: PROJECT }), ...everything })
    expect(manifestProblems(manifest, '')).toEqual([])
    expect(Object.keys(buildManifest(tool, index, { projectId: PROJECT }))).not.toContain('sandbox')
  })
  it("never carries what is the index's own (modulePath) unless in codeArtifactRef", () => {
    expect(buildManifest({ ...tool, somethingNew: 1 }, index, { projectId: PROJECT })).not.toHaveProperty('modulePath')
    expect(buildManifest({ ...tool, somethingNew: 1 }, index, { projectId: PROJECT })).not.toHaveProperty('somethingNew')
  })
  it('with an image, a tool with a handler gets codeArtifactRef: oci, the image, its modulePath, the artifactVersion', () => {
    expect(buildManifest(tool, index, { projectId: PROJECT, image: 'registry.example/acme:1' }).codeArtifactRef).toEqual({
      kind: 'oci',
      imageRef: 'registry.example/acme:1',
      modulePath: 'tools/echo.js',
      artifactVersion: '20261130.2',
    })
    expect(buildManifest(tool, index, { projectId: PROJECT })).not.toHaveProperty('codeArtifactRef')
  })
  it('a declarative tool (spec) gets no codeArtifactRef: the runtime runs it, no image holds its code', () => {
    const http = { ...tool, spec: { kind: 'http', method: 'GET', urlTemplate: 'https://example.com/{q}' } }
    const manifest = buildManifest(http, index, { projectId: PROJECT, image: 'registry.example/acme:1' })
    expect(manifest).not.toHaveProperty('codeArtifactRef')
    expect(manifest.spec).toEqual(http.spec)
  })
})

describe('the ToolManifest rules', () => {
  const valid = buildManifest(tool, index, { projectId: PROJECT })
  const problemsOf = (change: Record<string, unknown>) => manifestProblems({ ...valid, ...change } as ToolManifest, '/tools/4')

  it('a manifest built from a sound entry has no problem', () => {
    expect(manifestProblems(valid, '/tools/0')).toEqual([])
  })
  it('a version must be major.minor.patch', () => {
    expect(problemsOf({ version: '1.0' })).toEqual([{ path: '/tools/4/version', message: '"1.0" is not major.minor.patch' }])
    expect(problemsOf({ version: '1.0.0-beta' })).toHaveLength(1)
  })
  it('a description is required and not empty', () => {
    const { description: _, ...rest } = valid
    expect(manifestProblems(rest as ToolManifest, '/tools/4')).toEqual([{ path: '/tools/4/description', message: 'is required' }])
    expect(problemsOf({ description: '' })).toHaveLength(1)
  })
  it('limits are memMB and cpuMs, each an integer >= 1', () => {
    expect(problemsOf({ limits: { memMB: 0, cpuMs: 1.5 } })).toEqual([
      { path: '/tools/4/limits/memMB', message: '0 is not an integer >= 1' },
      { path: '/tools/4/limits/cpuMs', message: '1.5 is not an integer >= 1' },
    ])
    expect(problemsOf({ limits: { memMB: 64 } })).toEqual([{ path: '/tools/4/limits/cpuMs', message: 'is required' }])
  })
  it('sandbox and network.kind take only the values the spec names', () => {
    expect(problemsOf({ sandbox: 'jail', network: { kind: 'some' } })).toEqual([
      { path: '/tools/4/sandbox', message: '"jail" is not one of "none", "context-isolated", "strict"' },
      { path: '/tools/4/network/kind', message: '"some" is not one of "none", "unrestricted"' },
    ])
  })
  it('an effect kind the spec does not list is refused', () => {
    expect(problemsOf({ effects: [{ kind: 'reads' }, { kind: 'teleports' }] })).toEqual([
      { path: '/tools/4/effects/1/kind', message: expect.stringContaining('"teleports" is not one of') },
    ])
  })
  it('needsSpec.env names under KINDGI_ and secret names under kindgi. are reserved', () => {
    expect(problemsOf({ needsSpec: { env: { KINDGI_TENANT: {}, OWN: {} }, secrets: { 'kindgi.signing': {} } } })).toEqual([
      { path: '/tools/4/needsSpec/env/KINDGI_TENANT', message: '"KINDGI_TENANT" is under the reserved prefix KINDGI_: those names are Kindgi\'s own' },
      { path: '/tools/4/needsSpec/secrets/kindgi.signing', message: '"kindgi.signing" is under the reserved prefix kindgi.: those names are Kindgi\'s own' },
    ])
  })
  it('a declarative spec is an http spec with method and urlTemplate, and its secretRef is not reserved', () => {
    expect(problemsOf({ spec: { kind: 'http', method: 'GET', urlTemplate: 'https://x' } })).toEqual([])
    expect(problemsOf({ spec: { kind: 'grpc' } }).map((p) => p.path)).toEqual(['/tools/4/spec/method', '/tools/4/spec/urlTemplate', '/tools/4/spec/kind'])
    const authorization = { kind: 'bearer', secretRef: { envName: 'prod', name: 'kindgi.key' } }
    expect(problemsOf({ spec: { kind: 'http', method: 'GET', urlTemplate: 'https://x', authorization } })).toEqual([
      { path: '/tools/4/spec/authorization/secretRef/name', message: expect.stringContaining('reserved prefix kindgi.') },
    ])
  })
  it('only a tool with a handler may pause, store or read files', () => {
    const spec = { kind: 'http', method: 'GET', urlTemplate: 'https://x' }
    expect(problemsOf({ spec, pauses: true, readsFiles: true, storesFiles: false }).map((p) => p.path)).toEqual(['/tools/4/pauses', '/tools/4/readsFiles'])
  })
  it('a connection names its app, at least one permission and whose it is', () => {
    expect(problemsOf({ needsSpec: { connections: { mail: { app: 'G', permissions: [], as: 'robot' } } } }).map((p) => p.path)).toEqual([
      '/tools/4/needsSpec/connections/mail/app',
      '/tools/4/needsSpec/connections/mail/permissions',
      '/tools/4/needsSpec/connections/mail/as',
    ])
  })
})

describe('manifests from an index file', () => {
  const tempDir = tempDirs()
  const dir = tempDir('kph-manifests-')
  const write = (value: unknown) => {
    const path = join(dir, `index-${Math.random().toString(36).slice(2)}.json`)
    writeFileSync(path, JSON.stringify(value))
    return path
  }
  it('one manifest a tool, in index order; module files do not matter', () => {
    const result = manifestsFromIndex(write({ ...base, tools: [tool, { ...tool, id: 'acme.other', modulePath: 'gone.js' }] }), { projectId: PROJECT })
    expect(result.kind).toBe('ok')
    if (result.kind === 'ok') expect(result.manifests.map((m) => m.id)).toEqual(['acme.echo', 'acme.other'])
  })
  it('an index that breaks pack-index.md gives its problems with their paths, and no manifest', () => {
    expect(manifestsFromIndex(write({ ...base, tools: [{ id: 'x' }] }), { projectId: PROJECT })).toEqual({
      kind: 'error',
      problems: expect.arrayContaining([{ path: '/tools/0', message: "must have required property 'input'" }]),
    })
  })
  it('every manifest problem is reported at the index path of its tool', () => {
    const result = manifestsFromIndex(write({ ...base, tools: [tool, { ...tool, id: 'acme.b', version: 'one' }] }), { projectId: PROJECT })
    expect(result).toEqual({ kind: 'error', problems: [{ path: '/tools/1/version', message: '"one" is not major.minor.patch' }] })
  })
})
