// A pack author's path (issue 14), end to end: `npm pack` makes a package that installs into
// an empty folder, where a TypeScript pack importing defineTool and ToolContext from
// kindgi-pack-host type-checks with `tsc --noEmit` and is served by `npx kindgi-pack-host`.
import { execFileSync, spawnSync } from 'node:child_process'
import { mkdirSync, writeFileSync } from 'node:fs'
import { join } from 'node:path'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { invoke, request, ROOT, spawnHost, type Host } from '../helpers/host.js'
import { tempDirs } from '../helpers/temp-dir.js'

// Removed after the afterAll below has stopped the host served from it.
const tempDir = tempDirs()
const author = tempDir('kph-author-')
const NPM_QUIET = ['--no-audit', '--no-fund', '--prefer-offline', '--loglevel=error']

const TOOL = `import { defineTool, type ToolContext } from 'kindgi-pack-host'

type Input = { name: string }
type Output = { text: string }

export default defineTool<Input, Output>({
  input: { type: 'object', properties: { name: { type: 'string' } }, required: ['name'] },
  output: { type: 'object', properties: { text: { type: 'string' } }, required: ['text'] },
  handler(input: Input, ctx: ToolContext): Output {
    ctx.log.info('greeting', { name: input.name })
    const tenant: string = ctx.tenantId
    return { text: \`Hello, \${input.name}, from \${tenant}\` }
  },
})
`

const INDEX = {
  v: 1,
  packId: 'author-pack',
  packVersion: '0.1.0',
  artifactVersion: '20261201.1',
  publishedAt: '2026-12-01T00:00:00Z',
  agents: [],
  flows: [],
  guardrails: [],
  env: { required: [], optional: [] },
  tools: [
    {
      id: 'hello',
      version: '0.1.0',
      description: 'greets',
      modulePath: 'tools/hello.ts',
      input: { type: 'object', properties: { name: { type: 'string' } }, required: ['name'] },
      output: { type: 'object', properties: { text: { type: 'string' } }, required: ['text'] },
    },
  ],
}

const TSCONFIG = {
  compilerOptions: {
    target: 'es2024',
    module: 'nodenext',
    moduleResolution: 'nodenext',
    strict: true,
    noEmit: true,
    allowImportingTsExtensions: true,
    types: ['node'],
  },
  include: ['tools'],
}

let host: Host | undefined
beforeAll(() => {
  // The package as npm would publish it, from the build the tests run against.
  const tarball = execFileSync('npm', ['pack', '--ignore-scripts', '--silent', '--pack-destination', author], { cwd: ROOT, encoding: 'utf8' })
    .trim()
    .split('\n')
    .pop()!
  writeFileSync(join(author, 'package.json'), JSON.stringify({ name: 'author-pack', private: true, type: 'module' }))
  const typescript = execFileSync('node', ['-p', "require('typescript/package.json').version"], { cwd: ROOT, encoding: 'utf8' }).trim()
  const types = execFileSync('node', ['-p', "require('@types/node/package.json').version"], { cwd: ROOT, encoding: 'utf8' }).trim()
  execFileSync('npm', ['install', ...NPM_QUIET, join(author, tarball), `typescript@${typescript}`, `@types/node@${types}`], { cwd: author, stdio: 'pipe' })
  mkdirSync(join(author, 'tools'))
  writeFileSync(join(author, 'tools/hello.ts'), TOOL)
  writeFileSync(join(author, 'index.json'), JSON.stringify(INDEX, null, 2))
  writeFileSync(join(author, 'tsconfig.json'), JSON.stringify(TSCONFIG, null, 2))
}, 180_000)
afterAll(async () => {
  // npx does not hand SIGTERM on (as npm start does not: the README says to start node
  // itself in production): stop the host it started, which drains and exits.
  const pid = host?.lines.find((l) => l.kind === 'listening')?.pid
  if (typeof pid === 'number') process.kill(pid, 'SIGTERM')
  await host?.exited
})

describe('a TypeScript pack written against the installed package', () => {
  it('type-checks with tsc --noEmit', () => {
    const tsc = spawnSync('npx', ['tsc', '-p', '.'], { cwd: author, encoding: 'utf8' })
    expect(tsc.stdout + tsc.stderr).toBe('')
    expect(tsc.status).toBe(0)
  })

  it('and tsc refuses it when it uses ToolContext wrongly, so the types are really checked', () => {
    writeFileSync(
      join(author, 'tools/wrong.ts'),
      `import type { ToolContext } from 'kindgi-pack-host'\nexport const f = (ctx: ToolContext): number => ctx.tenantId.length + ctx.abortSignal.notAThing\n`,
    )
    try {
      const tsc = spawnSync('npx', ['tsc', '-p', '.'], { cwd: author, encoding: 'utf8' })
      expect(tsc.status).not.toBe(0)
      expect(tsc.stdout).toContain("Property 'notAThing' does not exist on type 'AbortSignal'")
    } finally {
      writeFileSync(join(author, 'tools/wrong.ts'), 'export {}\n')
    }
  })

  it('is served by npx kindgi-pack-host from that folder', async () => {
    host = await spawnHost({ args: ['--index', 'index.json', '--host', '127.0.0.1'], command: ['npx', '--no-install', 'kindgi-pack-host'], cwd: author })
    expect((await invoke(host, 'hello', { name: 'Ada' })).body).toEqual({ v: 2, kind: 'result', output: { text: 'Hello, Ada, from tenant-a' } })
    expect((await request(host, '/v1/info')).body).toMatchObject({ packId: 'author-pack' })
  })
})
