// `npm start` (issue 18): the command package.json's start script runs after its build, read
// from package.json itself, serving examples/hello-pack: it answers the README's curl session
// line for line (with curl), and the example shows a TypeScript tool typed with the package's
// types, a check, and a tool that logs with ctx.log; with --watch a save of the tool is served.
import { spawnSync } from 'node:child_process'
import { cpSync, readFileSync, renameSync, writeFileSync } from 'node:fs'
import { join } from 'node:path'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { matchesReadme, readmeCurlSession } from '../container/readme-run.js'
import { checkInvoke, invoke, request, ROOT, spawnHost, TOKEN as TEST_TOKEN, type Host } from '../helpers/host.js'
import { tempDirs } from '../helpers/temp-dir.js'

type Start = { env: Record<string, string>; args: string[] }

/** `npm run build && A=${A:-x} B=${B:-y} node dist/src/main.js ARGS`: the variables' defaults and ARGS. */
function startScript(): Start {
  const script = (JSON.parse(readFileSync(join(ROOT, 'package.json'), 'utf8')) as { scripts: Record<string, string> }).scripts.start!
  const [build, serve] = script.split(' && ')
  expect(build).toBe('npm run build')
  const words = serve!.split(/\s+/)
  const env: Record<string, string> = {}
  while (/^[A-Z_]+=/.test(words[0]!)) {
    const [name, value] = words.shift()!.split(/=(.*)/) as [string, string]
    env[name] = /^\$\{\w+:-(.*)\}$/.exec(value)?.[1] ?? value
  }
  expect(words.slice(0, 2)).toEqual(['node', 'dist/src/main.js'])
  return { env, args: words.slice(2) }
}

const start = startScript()
const TOKEN = start.env.KINDGI_PACK_SERVICE_TOKEN!

describe('npm start: examples/hello-pack, as the README shows it', () => {
  let host: Host
  beforeAll(async () => {
    // PORT 0 instead of the script's 8080: this machine is shared.
    host = await spawnHost({ args: [...start.args, '--host', '127.0.0.1'], env: { ...start.env, PORT: '0', KINDGI_PACK_SERVICE_TOKEN: TOKEN }, cwd: ROOT })
  })
  afterAll(async () => {
    await host?.stop()
  })

  it('serves with --watch, the dev token and the example index', () => {
    expect(start.args).toEqual(['--index', 'examples/hello-pack/index.json', '--watch'])
    expect(TOKEN).toBe('dev-token')
  })

  it("answers the README's curl session line for line", () => {
    const steps = readmeCurlSession(host.port)
    expect(steps.length).toBeGreaterThanOrEqual(4)
    for (const step of steps) {
      const ran = spawnSync('curl', ['--max-time', '10', ...step.args], { encoding: 'utf8' })
      expect(ran.status, step.args.join(' ')).toBe(0)
      expect(matchesReadme(ran.stdout, step.expected), `${ran.stdout}\n  vs README: ${step.expected}`).toBe(true)
    }
  })

  it("a TypeScript tool that logs with ctx.log: its record carries the call's tool and ids", async () => {
    const index = JSON.parse(readFileSync(join(ROOT, 'examples/hello-pack/index.json'), 'utf8')) as { tools: Array<{ id: string; modulePath: string }> }
    expect(index.tools.find((t) => t.id === 'hello.greet')?.modulePath).toBe('tools/greet.ts')
    expect(readFileSync(join(ROOT, 'examples/hello-pack/tools/greet.ts'), 'utf8')).toMatch(/import type \{ ToolContext \} from 'kindgi-pack-host'/)
    const answer = await request(host, '/v1/invoke', {
      method: 'POST',
      token: TOKEN,
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ v: 2, kind: 'invoke', tool: { id: 'hello.greet' }, input: { name: 'Ida' }, ctx: { tenantId: 't1', runId: 'run-ida' } }),
    })
    expect(answer.body).toEqual({ v: 2, kind: 'result', output: { greeting: 'Hello, Ida!' } })
    const logged = await host.waitFor('log', (l) => l.runId === 'run-ida')
    expect(logged).toMatchObject({ level: 'info', message: 'greeting', toolId: 'hello.greet', tenantId: 't1', name: 'Ida' })
  })

  it('a check: a verdict with its reason', async () => {
    const answer = await request(host, '/v1/invoke', {
      method: 'POST',
      token: TOKEN,
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({
        v: 2,
        kind: 'check-invoke',
        check: { id: 'hello.no-shouting' },
        config: { maxUppercaseRatio: 0.5 },
        trace: { finalAnswer: 'STOP SHOUTING' },
      }),
    })
    expect(answer.body).toEqual({ v: 2, kind: 'check-result', result: { passed: false, reason: '100% of the letters are uppercase' } })
  })
})

describe("npm start's --watch, on a copy of the example", () => {
  const tempDir = tempDirs()
  it('a save of the TypeScript tool is served', async () => {
    const dir = tempDir('kph-example-')
    cpSync(join(ROOT, 'examples/hello-pack'), dir, { recursive: true })
    const args = start.args.map((a) => (a === 'examples/hello-pack/index.json' ? join(dir, 'index.json') : a))
    const host = await spawnHost({ args: [...args, '--host', '127.0.0.1'], env: { ...start.env, PORT: '0', KINDGI_PACK_SERVICE_TOKEN: TEST_TOKEN } })
    try {
      const tool = join(dir, 'tools/greet.ts')
      writeFileSync(`${tool}~`, readFileSync(tool, 'utf8').replace('`${input.greeting}, ${input.name}!`', '`${input.greeting}, ${input.name}, saved!`'))
      renameSync(`${tool}~`, tool)
      expect(await host.waitFor('reloaded')).toMatchObject({ changed: ['tools/greet.ts'] })
      expect((await invoke(host, 'hello.greet', { name: 'Ana' })).body.output).toEqual({ greeting: 'Hello, Ana, saved!' })
      expect((await checkInvoke(host, 'hello.no-shouting', { maxUppercaseRatio: 0.5 }, { finalAnswer: 'calm' })).body.result).toEqual({ passed: true })
    } finally {
      await host.stop()
    }
  })
})
