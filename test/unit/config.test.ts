// Config: every input of docs/spec/CONTRACT.md §1 parsed once, defaults, and problems collected.
import { writeFileSync } from 'node:fs'
import { availableParallelism } from 'node:os'
import { join } from 'node:path'
import { describe, expect, it } from 'vitest'
import { FRONT_DEFAULTS, loadConfig, parseArgs } from '../../src/config.js'
import { tempDirs } from '../helpers/temp-dir.js'

const TOKEN = { KINDGI_PACK_SERVICE_TOKEN: 'tok' }

describe('defaults', () => {
  it('serves /app/index.json on port 8080 with a cap of 32, strict env check, filter on, posture none', () => {
    const result = loadConfig([], TOKEN)
    expect(result).toEqual({
      kind: 'ok',
      config: {
        indexPath: '/app/index.json',
        moduleRoot: '/app',
        host: undefined,
        port: 8080,
        token: 'tok',
        maxConcurrency: 32,
        workerThreads: availableParallelism(),
        tenantId: undefined,
        envCheck: 'strict',
        envFilter: true,
        sandbox: 'none',
        watch: false,
        metricsPort: undefined,
        front: { headersTimeoutMs: 10_000, bodyTimeoutMs: 30_000, keepAliveTimeoutMs: 65_000, maxConnections: 1_024 },
      },
    })
  })
})

describe('arguments', () => {
  it('accepts --flag value and --flag=value, and an argument wins over KINDGI_PACK_INDEX', () => {
    const result = loadConfig(['--index=/p/i.json', '--module-root', '/m', '--host', '127.0.0.1'], { ...TOKEN, KINDGI_PACK_INDEX: '/env/i.json' })
    expect(result).toMatchObject({ kind: 'ok', config: { indexPath: '/p/i.json', moduleRoot: '/m', host: '127.0.0.1' } })
  })
  it('the module root defaults to the index file folder', () => {
    expect(loadConfig([], { ...TOKEN, KINDGI_PACK_INDEX: '/srv/pack/index.json' })).toMatchObject({ config: { moduleRoot: '/srv/pack' } })
  })
  it('names unknown options, stray words and flags without a value', () => {
    const { problems } = parseArgs(['stray', '--nope', 'x', '--index'])
    expect(problems).toHaveLength(3)
    expect(problems.join(' ')).toContain('--nope')
    expect(problems.join(' ')).toContain('stray')
    expect(problems.join(' ')).toContain('--index needs a value')
  })
})

describe('environment values and their rules', () => {
  it('PORT 0 is allowed; out of range or not an integer is a problem', () => {
    expect(loadConfig([], { ...TOKEN, PORT: '0' })).toMatchObject({ config: { port: 0 } })
    for (const port of ['65536', '-1', '80.5', 'http']) expect(loadConfig([], { ...TOKEN, PORT: port }).kind).toBe('error')
  })
  it('KINDGI_PACK_METRICS_PORT turns metrics on at a port 0–65535 other than PORT; unset or empty leaves them off', () => {
    expect(loadConfig([], { ...TOKEN, KINDGI_PACK_METRICS_PORT: '9464' })).toMatchObject({ config: { metricsPort: 9464 } })
    expect(loadConfig([], { ...TOKEN, PORT: '0', KINDGI_PACK_METRICS_PORT: '0' })).toMatchObject({ config: { port: 0, metricsPort: 0 } })
    expect(loadConfig([], { ...TOKEN, KINDGI_PACK_METRICS_PORT: '' })).toMatchObject({ config: { metricsPort: undefined } })
    for (const bad of ['65536', '-1', 'on', '8080']) {
      expect(loadConfig([], { ...TOKEN, KINDGI_PACK_METRICS_PORT: bad })).toMatchObject({
        kind: 'error',
        problems: [expect.stringContaining('KINDGI_PACK_METRICS_PORT')],
      })
    }
  })
  it('the cap must be an integer from 1 to 100000, and the refusal says so', () => {
    expect(loadConfig([], { ...TOKEN, KINDGI_PACK_SERVICE_MAX_CONCURRENCY: '3' })).toMatchObject({ config: { maxConcurrency: 3 } })
    expect(loadConfig([], { ...TOKEN, KINDGI_PACK_SERVICE_MAX_CONCURRENCY: '100000' })).toMatchObject({ config: { maxConcurrency: 100000 } })
    for (const cap of ['0', 'many', '2.5', '200000']) {
      expect(loadConfig([], { ...TOKEN, KINDGI_PACK_SERVICE_MAX_CONCURRENCY: cap })).toMatchObject({
        kind: 'error',
        problems: [`KINDGI_PACK_SERVICE_MAX_CONCURRENCY must be an integer from 1 to 100000, not "${cap}"`],
      })
    }
  })
  it('collects every problem instead of stopping at the first', () => {
    const result = loadConfig([], { PORT: 'x', KINDGI_PACK_ENV_CHECK: 'x', KINDGI_PACK_ENV_FILTER: 'x', KINDGI_PACK_SANDBOX: 'x' })
    expect(result.kind).toBe('error')
    if (result.kind === 'error') expect(result.problems).toHaveLength(5)
  })
  it('refuses --max-old-space-size in NODE_OPTIONS, which would silently defeat memMB', () => {
    const result = loadConfig([], { ...TOKEN, NODE_OPTIONS: '--enable-source-maps --max-old-space-size=512' })
    expect(result).toMatchObject({ kind: 'error', problems: [expect.stringContaining('max-old-space-size')] })
  })
  it('pins a tenant only when KINDGI_PACK_TENANT_ID is non-empty', () => {
    expect(loadConfig([], { ...TOKEN, KINDGI_PACK_TENANT_ID: 'acme' })).toMatchObject({ config: { tenantId: 'acme' } })
    expect(loadConfig([], { ...TOKEN, KINDGI_PACK_TENANT_ID: '' })).toMatchObject({ config: { tenantId: undefined } })
  })
})

describe('the token', () => {
  const tempDir = tempDirs()
  it('is trimmed, and must be printable ASCII without spaces', () => {
    expect(loadConfig([], { KINDGI_PACK_SERVICE_TOKEN: '  abc~!  ' })).toMatchObject({ config: { token: 'abc~!' } })
    for (const bad of ['', '   ', 'a b', 'ä', 'x\u0000y']) expect(loadConfig([], { KINDGI_PACK_SERVICE_TOKEN: bad }).kind).toBe('error')
  })
  it('may come from a file, read once, with its trailing newline trimmed', () => {
    const dir = tempDir('kph-cfg-')
    writeFileSync(join(dir, 't'), 'secret-from-file\n')
    expect(loadConfig([], { KINDGI_PACK_SERVICE_TOKEN_FILE: join(dir, 't') })).toMatchObject({ config: { token: 'secret-from-file' } })
    expect(loadConfig([], { KINDGI_PACK_SERVICE_TOKEN_FILE: join(dir, 't'), KINDGI_PACK_SERVICE_TOKEN: 'also' }).kind).toBe('error')
    expect(loadConfig([], { KINDGI_PACK_SERVICE_TOKEN_FILE: join(dir, 'absent') }).kind).toBe('error')
  })
  it('an empty token variable beside a token file is fine', () => {
    const dir = tempDir('kph-cfg-')
    writeFileSync(join(dir, 't'), 'x')
    expect(loadConfig([], { KINDGI_PACK_SERVICE_TOKEN_FILE: join(dir, 't'), KINDGI_PACK_SERVICE_TOKEN: '' }).kind).toBe('ok')
  })
})

describe('front limits', () => {
  it('reads the headers, body and keep-alive timeouts and the connection bound from the environment', () => {
    const env = {
      ...TOKEN,
      KINDGI_PACK_HEADERS_TIMEOUT_MS: '500',
      KINDGI_PACK_BODY_TIMEOUT_MS: '1500',
      KINDGI_PACK_KEEPALIVE_TIMEOUT_MS: '70000',
      KINDGI_PACK_MAX_CONNECTIONS: '10',
    }
    expect(loadConfig([], env)).toMatchObject({
      config: { front: { headersTimeoutMs: 500, bodyTimeoutMs: 1500, keepAliveTimeoutMs: 70_000, maxConnections: 10 } },
    })
  })
  it('keeps the keep-alive timeout above a load balancer idle timeout of 60 s by default', () => {
    expect(FRONT_DEFAULTS.keepAliveTimeoutMs).toBeGreaterThan(60_000)
  })
  it('names every bad value with its rule, all in one config-invalid', () => {
    const env = {
      ...TOKEN,
      KINDGI_PACK_HEADERS_TIMEOUT_MS: '0',
      KINDGI_PACK_BODY_TIMEOUT_MS: 'soon',
      KINDGI_PACK_KEEPALIVE_TIMEOUT_MS: '-1',
      KINDGI_PACK_MAX_CONNECTIONS: '1.5',
    }
    const result = loadConfig([], env)
    expect(result.kind).toBe('error')
    const problems = result.kind === 'error' ? result.problems : []
    expect(problems).toEqual([
      'KINDGI_PACK_HEADERS_TIMEOUT_MS must be an integer from 100 to 600000, not "0"',
      'KINDGI_PACK_BODY_TIMEOUT_MS must be an integer from 100 to 3600000, not "soon"',
      'KINDGI_PACK_KEEPALIVE_TIMEOUT_MS must be an integer from 100 to 3600000, not "-1"',
      'KINDGI_PACK_MAX_CONNECTIONS must be an integer from 1 to 1000000, not "1.5"',
    ])
  })
})
