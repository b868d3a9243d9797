// `kindgi-pack-host register` against a fake runtime on loopback: what it sends (headers,
// bodies, keys), and what it does with every documented answer of POST /v1/tools.
import { writeFileSync } from 'node:fs'
import { join } from 'node:path'
import { afterEach, describe, expect, it } from 'vitest'
import { registrationKey } from '../../src/cli/idempotency.js'
import { CLI_PACK, PROJECT_ID, runCli } from '../helpers/cli.js'
import { registered, runtimeError, startFakeRuntime, type FakeRuntime, type Script } from '../helpers/fake-runtime.js'
import { tempDirs } from '../helpers/temp-dir.js'

const TOKEN = 'api-token-for-tests-0123'
const TOOLS = ['acme.echo', 'acme.fetch-page', 'acme.ledger', 'acme.mailbox', 'acme.stamp', 'acme.wait']
const VERSIONS: Record<string, string> = { 'acme.ledger': '2.1.0', 'acme.wait': '3.0.0' }
const keyOf = (toolId: string) =>
  registrationKey({ projectId: PROJECT_ID, packId: 'acme', toolId, version: VERSIONS[toolId] ?? '1.0.0', artifactVersion: '20261130.3' })

let runtime: FakeRuntime | undefined
afterEach(async () => {
  await runtime?.close()
  runtime = undefined
})

async function register(script: Script, extraArgs: string[] = [], env: Record<string, string | undefined> = { KINDGI_API_TOKEN: TOKEN }) {
  runtime = await startFakeRuntime(script)
  const run = await runCli(['register', '--index', CLI_PACK, '--project-id', PROJECT_ID, '--api', runtime.url, ...extraArgs], env)
  return { ...run, runtime }
}

describe('what register sends', () => {
  const tempDir = tempDirs()
  it('one POST /v1/tools per tool: Bearer token, JSON body equal to the manifest, and the derived Idempotency-Key', async () => {
    const printed = await runCli(['manifests', '--index', CLI_PACK, '--project-id', PROJECT_ID, '--image', 'registry.example/acme/pack:1.4.0'])
    const { code, stdout, stderr, runtime } = await register(registered, ['--image', 'registry.example/acme/pack:1.4.0'])
    expect(code).toBe(0)
    expect(runtime.received.map((r) => r.body.id).sort()).toEqual(TOOLS)
    for (const request of runtime.received) {
      expect(request.method).toBe('POST')
      expect(request.url).toBe('/v1/tools')
      expect(request.headers.authorization).toBe(`Bearer ${TOKEN}`)
      expect(request.headers['content-type']).toBe('application/json')
      expect(request.headers['idempotency-key']).toBe(keyOf(request.body.id))
    }
    const bodies = [...runtime.received].sort((a, b) => (a.body.id < b.body.id ? -1 : 1)).map((r) => r.body)
    expect(bodies).toEqual(JSON.parse(printed.stdout))
    expect(stdout).toMatch(/6 tools: 6 registered/)
    expect(stderr.match(/^registered /gm)).toHaveLength(6)
    expect(stdout + stderr).not.toContain(TOKEN)
  })

  it('keeps a path prefix of --api and sends nothing beside POST /v1/tools', async () => {
    runtime = await startFakeRuntime(registered)
    const run = await runCli(['register', '--index', CLI_PACK, '--project-id', PROJECT_ID, '--api', `${runtime.url}/kindgi/`], { KINDGI_API_TOKEN: TOKEN })
    expect(run.code).toBe(0)
    expect(new Set(runtime.received.map((r) => `${r.method} ${r.url}`))).toEqual(new Set(['POST /kindgi/v1/tools']))
  })

  it('reads the token from KINDGI_API_TOKEN_FILE or --token-file, trimmed', async () => {
    const dir = tempDir('kph-register-')
    writeFileSync(join(dir, 'token'), 'from-a-file\n')
    const fromEnv = await register(registered, [], { KINDGI_API_TOKEN_FILE: join(dir, 'token') })
    expect(fromEnv.code).toBe(0)
    expect(new Set(fromEnv.runtime.received.map((r) => r.headers.authorization))).toEqual(new Set(['Bearer from-a-file']))
    await runtime?.close()
    const fromFlag = await register(registered, ['--token-file', join(dir, 'token')], { KINDGI_API_TOKEN: 'ignored-when-a-file-is-named' })
    expect(fromFlag.code).toBe(0)
    expect(new Set(fromFlag.runtime.received.map((r) => r.headers.authorization))).toEqual(new Set(['Bearer from-a-file']))
  })

  it('without a token it sends nothing and exits 2 saying where a token comes from', async () => {
    const { code, stderr, runtime } = await register(registered, [], {})
    expect(code).toBe(2)
    expect(stderr).toContain('KINDGI_API_TOKEN')
    expect(runtime.received).toHaveLength(0)
  })

  it('--dry-run prints each request, token hidden, and sends nothing', async () => {
    const text = await register(registered, ['--dry-run'])
    expect(text.code).toBe(0)
    expect(text.runtime.received).toHaveLength(0)
    expect(text.stdout).toContain(`POST ${text.runtime.url}/v1/tools`)
    expect(text.stdout).toContain('Authorization: Bearer ***')
    expect(text.stdout).toContain(`Idempotency-Key: ${keyOf('acme.echo')}`)
    expect(text.stdout).not.toContain(TOKEN)
    await runtime?.close()
    const json = await register(registered, ['--dry-run', '--json'])
    const requests = JSON.parse(json.stdout).requests as Array<{ headers: Record<string, string>; body: { id: string } }>
    expect(requests.map((r) => r.body.id)).toEqual(TOOLS)
    expect(requests.map((r) => r.headers['Idempotency-Key'])).toEqual(TOOLS.map(keyOf))
    expect(json.runtime.received).toHaveLength(0)
  })

  it('sends up to four requests at a time, never more', async () => {
    let open = 0
    let most = 0
    const waiting: Array<() => void> = []
    const { code } = await register(async (request) => {
      open++
      most = Math.max(most, open)
      // Hold answers until four are open (or the last tools came): a fifth would show up here.
      const done = new Promise<void>((resolve) => waiting.push(resolve))
      if (open === 4 || runtime!.received.length === TOOLS.length) for (const release of waiting.splice(0)) release()
      const fallback = setTimeout(() => {
        for (const release of waiting.splice(0)) release()
      }, 10_000)
      await done
      clearTimeout(fallback)
      open--
      return registered(request)
    })
    expect(code).toBe(0)
    expect(most).toBe(4)
  })
})

describe('answers that are not errors', () => {
  it('409 tool-already-registered is reported as already there, and the run exits 0', async () => {
    const { code, stdout, stderr } = await register((request) =>
      request.body.id === 'acme.echo' ? runtimeError(409, 'tool-already-registered', 'acme.echo 1.0.0 is taken') : registered(request),
    )
    expect(code).toBe(0)
    expect(stderr).toMatch(/^already +acme\.echo@1\.0\.0/m)
    expect(stdout).toMatch(/acme\.echo +1\.0\.0 +already registered/)
    expect(stdout).toContain('5 registered, 1 already registered')
  })

  it('a rerun is safe: it sends the same keys, and tools already there do not fail it', async () => {
    const first = await register(registered)
    const keys = first.runtime.received.map((r) => `${r.body.id} ${r.headers['idempotency-key']}`).sort()
    await runtime?.close()
    const again = await register(() => runtimeError(409, 'tool-already-registered', 'taken'))
    expect(again.code).toBe(0)
    expect(again.runtime.received.map((r) => `${r.body.id} ${r.headers['idempotency-key']}`).sort()).toEqual(keys)
  })
})

describe('answers that mean "send it again"', () => {
  it('409 idempotency-key-in-flight, 429 and 503 are retried after Retry-After with the same key and body', async () => {
    const { code, stdout, stderr, runtime } = await register((request, attempt) => {
      if (request.body.id !== 'acme.echo') return registered(request)
      if (attempt === 1) return runtimeError(409, 'idempotency-key-in-flight', 'still running', { headers: { 'retry-after': '0' } })
      if (attempt === 2) return runtimeError(429, 'rate-limit-exceeded', 'compile budget spent', { headers: { 'retry-after': '1' } })
      if (attempt === 3) return runtimeError(503, 'idempotency-store-unavailable', 'store down', { headers: { 'retry-after': '0' } })
      return registered(request)
    })
    expect(code).toBe(0)
    const sent = runtime.forTool('acme.echo')
    expect(sent).toHaveLength(4)
    expect(new Set(sent.map((r) => r.headers['idempotency-key']))).toEqual(new Set([keyOf('acme.echo')]))
    expect(new Set(sent.map((r) => JSON.stringify(r.body))).size).toBe(1)
    expect(stderr.match(/^retry +acme\.echo@1\.0\.0/gm)).toHaveLength(3)
    expect(stdout).toMatch(/acme\.echo +1\.0\.0 +registered +4 +200/)
  })

  it('waits as long as Retry-After says before sending again', async () => {
    const times: number[] = []
    const { code } = await register((request, attempt) => {
      if (request.body.id !== 'acme.echo') return registered(request)
      times.push(Date.now())
      return attempt === 1 ? runtimeError(503, 'idempotency-store-unavailable', 'store down', { headers: { 'retry-after': '1' } }) : registered(request)
    })
    expect(code).toBe(0)
    expect(times).toHaveLength(2)
    expect(times[1]! - times[0]!).toBeGreaterThanOrEqual(950)
  })

  it('gives up after 5 attempts, and says so', async () => {
    const { code, stdout, stderr, runtime } = await register((request) =>
      request.body.id === 'acme.echo'
        ? runtimeError(503, 'idempotency-store-unavailable', 'store down', { headers: { 'retry-after': '0' } })
        : registered(request),
    )
    expect(code).toBe(1)
    expect(runtime.forTool('acme.echo')).toHaveLength(5)
    expect(stderr).toMatch(/failed +acme\.echo@1\.0\.0: 503 idempotency-store-unavailable: gave up after 5 attempts: store down/)
    expect(stdout).toMatch(/acme\.echo +1\.0\.0 +failed +5 +503 idempotency-store-unavailable/)
  })
})

describe('answers that stop the run', () => {
  const refusals = [
    runtimeError(400, 'validation-failed', 'Tool manifest failed validation', { details: { issues: [{ instancePath: '/version', message: 'bad version' }] } }),
    runtimeError(409, 'tool-project-mismatch', 'The tool lives in another project', { details: { toolId: 'acme.echo' } }),
    runtimeError(413, 'request-too-large', 'The body is over the limit', { details: { maxBytes: 1048576 } }),
  ]
  it.each(refusals.map((answer) => [`${answer.status} ${(answer.body as any).error.code}`, answer] as const))(
    '%s: prints the code, message and details, sends no new request, exits 1',
    async (_, answer) => {
      const { code, stdout, stderr, runtime } = await register(() => answer)
      const error = (answer.body as any).error
      expect(code).toBe(1)
      expect(stderr).toContain(`${answer.status} ${error.code}: ${error.message}`)
      expect(stderr).toContain(`details: ${JSON.stringify(error.details)}`)
      // The first four were in flight together; nothing starts after a failure.
      expect(runtime.received).toHaveLength(4)
      expect(stdout).toContain('4 failed, 2 skipped')
    },
  )

  it.each([
    ['401', runtimeError(401, 'unauthorized', 'The token is revoked')],
    ['404 project-not-found', runtimeError(404, 'project-not-found', 'No such project in this tenant')],
  ])('%s stops everything, even a retry that was waiting', async (_, answer) => {
    const started = Date.now()
    const { code, stdout, stderr, runtime } = await register((request) =>
      request.body.id === 'acme.echo' ? runtimeError(503, 'idempotency-store-unavailable', 'store down', { headers: { 'retry-after': '30' } }) : answer,
    )
    expect(code).toBe(1)
    expect(runtime.forTool('acme.echo')).toHaveLength(1)
    expect(Date.now() - started).toBeLessThan(25_000)
    expect(stderr).toContain(`${answer.status} ${(answer.body as any).error.code}: ${(answer.body as any).error.message}`)
    expect(stdout).toMatch(/acme\.echo +1\.0\.0 +skipped/)
    expect(runtime.received.length).toBeLessThanOrEqual(4)
  })

  it('a runtime that cannot be reached is a failure, not retried, and the message says a rerun is safe', async () => {
    runtime = await startFakeRuntime(registered)
    const url = runtime.url
    await runtime.close()
    runtime = undefined
    const { code, stderr } = await runCli(['register', '--index', CLI_PACK, '--project-id', PROJECT_ID, '--api', url], { KINDGI_API_TOKEN: TOKEN })
    expect(code).toBe(1)
    expect(stderr).toMatch(/ECONNREFUSED/)
    expect(stderr).toContain('a rerun sends the same Idempotency-Key')
  })
})

describe('--json', () => {
  it("prints { ok, results } with each tool's result, answer, attempts and key", async () => {
    const { code, stdout } = await register(
      (request) => (request.body.id === 'acme.echo' ? runtimeError(409, 'tool-already-registered', 'taken') : registered(request)),
      ['--json'],
    )
    expect(code).toBe(0)
    const printed = JSON.parse(stdout)
    expect(printed.ok).toBe(true)
    expect(printed.results).toHaveLength(6)
    expect(printed.results[0]).toMatchObject({
      id: 'acme.echo',
      version: '1.0.0',
      idempotencyKey: keyOf('acme.echo'),
      result: 'already-registered',
      status: 409,
      attempts: 1,
    })
    expect(printed.results[1]).toMatchObject({ id: 'acme.fetch-page', result: 'registered', status: 200 })
  })
})
