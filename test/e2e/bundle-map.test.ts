// --bundle-map FILE (issue 14), as the publisher's service takes it: an image that ships
// bundles (here made by esbuild from the TypeScript fixture pack) serves an index that names
// the sources. A module the map covers loads from its bundle; one it does not resolves as named.
import { mkdirSync, mkdtempSync, readFileSync, writeFileSync } from 'node:fs'
import { join } from 'node:path'
import { build } from 'esbuild'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { PROJECT_ID, runCli } from '../helpers/cli.js'
import { checkInvoke, FIXTURES, invoke, spawnHost, type Host } from '../helpers/host.js'
import { tempDirs } from '../helpers/temp-dir.js'

const TS_PACK = join(FIXTURES, 'ts-pack')
// Removed after the afterAll below has stopped the hosts.
const tempDir = tempDirs()
/** An image's layout: the index and the bundles, none of the TypeScript sources. */
const image = tempDir('kph-bundles-')
const INDEX = join(image, 'index.json')
const MAP = join(image, 'bundle-map.json')
const MAPPED = { 'tools/greet.ts': 'bundles/greet.js', 'tools/paint.mts': 'bundles/paint.js', 'checks/short-enough.ts': 'bundles/short-enough.js' }

type Index = { tools: Array<{ id: string; modulePath: string }>; guardrails: unknown[] }

function writeIndex(change: (index: Index) => void = () => undefined): string {
  const index = JSON.parse(readFileSync(join(TS_PACK, 'index.json'), 'utf8')) as Index
  index.tools = index.tools.filter((t) => t.id === 'greet' || t.id === 'paint')
  change(index)
  const file = join(mkdtempSync(join(image, 'index-')), 'index.json')
  writeFileSync(file, `${JSON.stringify(index, null, 2)}\n`)
  return file
}

const hosts: Host[] = []
beforeAll(async () => {
  mkdirSync(join(image, 'bundles'))
  for (const [source, bundle] of Object.entries(MAPPED)) {
    await build({ entryPoints: [join(TS_PACK, source)], bundle: true, platform: 'node', format: 'esm', outfile: join(image, bundle), logLevel: 'silent' })
  }
  writeFileSync(INDEX, readFileSync(writeIndex()))
  writeFileSync(MAP, JSON.stringify(MAPPED))
})
afterAll(async () => {
  await Promise.all(hosts.map((h) => h.stop()))
})

async function boot(args: string[]): Promise<Host> {
  const host = await spawnHost({ args: [...args, '--host', '127.0.0.1'], waitListening: false })
  hosts.push(host)
  return host
}

describe('a module the bundle map covers', () => {
  it('loads from its bundle: tools and a check whose TypeScript sources are not there answer', async () => {
    const host = await spawnHost({ args: ['--index', INDEX, '--bundle-map', MAP, '--host', '127.0.0.1'] })
    hosts.push(host)
    expect((await invoke(host, 'greet', { name: 'Ada' })).body).toEqual({ v: 2, kind: 'result', output: { text: 'Hello, Ada!' } })
    expect((await invoke(host, 'paint', { depth: 2 })).body).toEqual({ v: 2, kind: 'result', output: { text: 'dark green x2' } })
    expect((await checkInvoke(host, 'short-enough', { max: 9 }, { text: 'fits' })).body).toMatchObject({ result: { passed: true } })
  })

  it('without the map the same index fails: each source is a missing module, as written in the index', async () => {
    const host = await boot(['--index', INDEX])
    const failed = await host.waitFor('boot-failed')
    expect(failed.problems).toEqual(['Missing module: tools/greet.ts', 'Missing module: tools/paint.mts', 'Missing module: checks/short-enough.ts'])
  })
})

describe('a module the bundle map does not cover', () => {
  it('resolves as named, so a missing one is "Missing module: <modulePath as written>"', async () => {
    const index = writeIndex((i) => i.tools.push({ ...i.tools[0]!, id: 'unmapped', modulePath: 'tools/unmapped.ts' }))
    writeFileSync(join(index, '..', 'map.json'), JSON.stringify(MAPPED))
    const host = await boot(['--index', index, '--module-root', image, '--bundle-map', join(index, '..', 'map.json')])
    expect((await host.waitFor('boot-failed')).problems).toEqual(['Missing module: tools/unmapped.ts'])
  })

  it('a bundle the map names that is not there is a missing module naming both', async () => {
    writeFileSync(join(image, 'gone.json'), JSON.stringify({ ...MAPPED, 'tools/greet.ts': 'bundles/gone.js' }))
    const host = await boot(['--index', INDEX, '--bundle-map', join(image, 'gone.json')])
    expect((await host.waitFor('boot-failed')).problems).toEqual(['Missing module: bundles/gone.js (the bundle --bundle-map names for tools/greet.ts)'])
  })
})

describe('a bad --bundle-map', () => {
  it('with an empty value is config-invalid "--bundle-map needs a path"', async () => {
    for (const args of [['--bundle-map='], ['--bundle-map']]) {
      const host = await boot(['--index', INDEX, ...args])
      expect((await host.waitFor('config-invalid')).problems).toEqual(['--bundle-map needs a path'])
      expect(await host.exited).toBe(1)
    }
  })

  it('that cannot be read, is not JSON or is not an object of paths fails the boot and says what it must be', async () => {
    writeFileSync(join(image, 'list.json'), '["tools/greet.ts"]')
    writeFileSync(join(image, 'broken.json'), '{"tools/greet.ts":')
    writeFileSync(join(image, 'numbers.json'), '{"tools/greet.ts": 3}')
    for (const file of ['absent.json', 'list.json', 'broken.json', 'numbers.json']) {
      const host = await boot(['--index', INDEX, '--bundle-map', join(image, file)])
      const failed = await host.waitFor('boot-failed')
      expect(failed.problems).toEqual([expect.stringContaining('must be a JSON object of source path → bundle path')])
      expect(await host.exited).toBe(1)
    }
  })
})

describe('check and manifests take --bundle-map', () => {
  it('check loads the bundles the map names and finds no problem; without it, the sources are missing', async () => {
    expect(await runCli(['check', '--index', INDEX, '--bundle-map', MAP])).toMatchObject({ code: 0, stdout: `${INDEX}: no problems\n` })
    const without = await runCli(['check', '--index', INDEX])
    expect(without.code).toBe(1)
    expect(without.stdout).toContain('Missing module: tools/greet.ts')
  })

  it('manifests refuses a map that is not an object, and prints the manifests with a good one', async () => {
    const bad = await runCli(['manifests', '--index', INDEX, '--project-id', PROJECT_ID, '--bundle-map', join(image, 'list.json')])
    expect(bad.code).toBe(1)
    expect(bad.stdout + bad.stderr).toContain('must be a JSON object of source path → bundle path')
    const good = await runCli(['manifests', '--index', INDEX, '--project-id', PROJECT_ID, '--bundle-map', MAP])
    expect(good.code).toBe(0)
    expect((JSON.parse(good.stdout) as Array<{ id: string }>).map((m) => m.id)).toEqual(['greet', 'paint'])
  })
})
