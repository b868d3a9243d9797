// TypeScript packs as an indexer writes them (issue 14): modulePaths ending in .ts, .mts and
// .cts load in the workers, with imports between TypeScript files and syntax that is more than
// annotations (an enum, a namespace, parameter properties), in every posture, under --watch
// and in `check`; a handler's stack points at the .ts source.
import { cpSync, readFileSync, renameSync, writeFileSync } from 'node:fs'
import { join } from 'node:path'
import { afterAll, describe, expect, it } from 'vitest'
import { runCli } from '../helpers/cli.js'
import { checkInvoke, FIXTURES, invoke, spawnHost, type Host } from '../helpers/host.js'
import { tempDirs } from '../helpers/temp-dir.js'

const TS_PACK = join(FIXTURES, 'ts-pack')
const TS_INDEX = join(TS_PACK, 'index.json')

// Removed after the afterAll below has stopped the hosts served from them.
const tempDir = tempDirs()
const hosts: Host[] = []
afterAll(async () => {
  await Promise.all(hosts.map((h) => h.stop()))
})

async function serve(index: string, env: Record<string, string> = {}, extra: string[] = []): Promise<Host> {
  const host = await spawnHost({ args: ['--index', index, '--host', '127.0.0.1', ...extra], env })
  hosts.push(host)
  return host
}

/** Every tool and the check of the TypeScript fixture pack, with their expected answers. */
async function expectServed(host: Host): Promise<void> {
  expect((await invoke(host, 'greet', { name: 'Ada' })).body).toEqual({ v: 2, kind: 'result', output: { text: 'Hello, Ada!' } })
  expect((await invoke(host, 'tsc-style', { name: 'Bo' })).body).toEqual({ v: 2, kind: 'result', output: { text: 'Hello, Bo!' } })
  expect((await invoke(host, 'paint', { depth: 3 })).body).toEqual({ v: 2, kind: 'result', output: { text: 'dark green x3' } })
  expect((await invoke(host, 'legacy', { n: 21 })).body).toEqual({ v: 2, kind: 'result', output: { n: 42 } })
  expect((await checkInvoke(host, 'short-enough', { max: 3 }, { text: 'abcd' })).body).toEqual({ v: 2, kind: 'check-result', result: { passed: false } })
  expect((await checkInvoke(host, 'short-enough', { max: 5 }, { text: 'abcd' })).body).toEqual({ v: 2, kind: 'check-result', result: { passed: true } })
}

describe('a TypeScript pack is served as indexed', () => {
  for (const sandbox of ['none', 'context-isolated', 'strict'] as const) {
    it(`tools in .ts, .mts and .cts and a check in .ts answer under KINDGI_PACK_SANDBOX=${sandbox}`, async () => {
      await expectServed(await serve(TS_INDEX, { KINDGI_PACK_SANDBOX: sandbox }))
    }, 60_000)
  }

  it('a handler that throws in a transformed file (an enum) has a cause.stack at the line of the .ts source', async () => {
    const host = await serve(TS_INDEX)
    const answer = await invoke(host, 'boom', { mood: 'angry' })
    expect(answer.body).toMatchObject({
      kind: 'error',
      code: 'handler-throw',
      toolId: 'boom',
      message: 'Handler for tool "boom" threw: Error: boom from TypeScript',
    })
    expect(answer.body.cause.stack).toMatch(/tools\/boom\.ts:9:\d+/)
  })

  it('outside any package.json, .ts files are ES modules or CommonJS by their syntax, as Node decides', async () => {
    const dir = tempDir('kph-ts-')
    cpSync(TS_PACK, dir, { recursive: true })
    await expectServed(await serve(join(dir, 'index.json')))
  })
})

describe('a TypeScript module that does not compile', () => {
  it('fails the boot with one line naming the file, the line and the column', async () => {
    const dir = tempDir('kph-ts-bad-')
    cpSync(TS_PACK, dir, { recursive: true })
    writeFileSync(join(dir, 'lib/format.ts'), 'export function greeting(name: string) {\n  return { text: name + }\n}\n')
    const host = await spawnHost({ args: ['--index', join(dir, 'index.json'), '--host', '127.0.0.1'], waitListening: false })
    hosts.push(host)
    const failed = await host.waitFor('boot-failed')
    expect(await host.exited).toBe(1)
    expect(failed.problems).toContainEqual(
      expect.stringMatching(/^Module tools\/greet\.ts threw while loading: SyntaxError: TypeScript at .*lib\/format\.ts:2:\d+: /),
    )
  })
})

describe('kindgi-pack-host check on a TypeScript pack', () => {
  it('loads every TypeScript module as serve does and finds no problem', async () => {
    const run = await runCli(['check', '--index', TS_INDEX])
    expect(run.stderr).toBe('')
    expect(run).toMatchObject({ code: 0, stdout: `${TS_INDEX}: no problems\n` })
  })
})

describe('--watch with a TypeScript pack', () => {
  it('a changed index reloads and the TypeScript tools are served from the new pack', async () => {
    const dir = tempDir('kph-ts-watch-')
    cpSync(TS_PACK, dir, { recursive: true })
    const index = join(dir, 'index.json')
    const host = await serve(index, {}, ['--watch'])
    const parsed = JSON.parse(readFileSync(index, 'utf8')) as { artifactVersion: string }
    parsed.artifactVersion = '20261201.2'
    writeFileSync(`${index}.tmp`, JSON.stringify(parsed, null, 2))
    renameSync(`${index}.tmp`, index)
    await host.waitFor('reloaded', (l) => l.artifactVersion === '20261201.2')
    await expectServed(host)
  }, 60_000)
})
