// docs/spec/CONTRACT.md §4: required env names, the strict and warn checks, the env filter and its
// env-dropped line (at boot, and under --watch only when the withheld names change).
import { cpSync, readFileSync, renameSync, writeFileSync } from 'node:fs'
import { join } from 'node:path'
import { describe, expect, it } from 'vitest'
import { baseEnv, FIXTURES, invoke, request, sleep, spawnHost } from '../helpers/host.js'
import { tempDirs } from '../helpers/temp-dir.js'

describe('a required env name that is missing', () => {
  it('under strict: /readyz and invokes answer 503 missing env with sorted names; info lists them; logged once', async () => {
    const host = await spawnHost({ env: { FIXTURE_REQUIRED: '' } })
    try {
      const ready = await request(host, '/readyz', { token: null })
      expect(ready).toMatchObject({ status: 503, body: { error: 'missing env', missingEnv: ['FIXTURE_REQUIRED'] } })
      expect(ready.headers.get('retry-after')).toBe('1')
      const call = await invoke(host, 'echo')
      expect(call).toMatchObject({ status: 503, body: { error: 'missing env', missingEnv: ['FIXTURE_REQUIRED'] } })
      expect((await request(host, '/v1/info')).body.missingEnv).toEqual(['FIXTURE_REQUIRED'])
      expect(host.lines.filter((l) => l.kind === 'missing-env')).toEqual([expect.objectContaining({ check: 'strict', names: ['FIXTURE_REQUIRED'] })])
    } finally {
      await host.stop()
    }
  })
  it('under warn: it serves, and still logs and lists the names', async () => {
    const host = await spawnHost({ env: { FIXTURE_REQUIRED: undefined, KINDGI_PACK_ENV_CHECK: 'warn' } })
    try {
      expect((await request(host, '/readyz', { token: null })).status).toBe(200)
      expect((await invoke(host, 'echo', { a: 1 })).body).toEqual({ v: 2, kind: 'result', output: { a: 1 } })
      expect((await request(host, '/v1/info')).body.missingEnv).toEqual(['FIXTURE_REQUIRED'])
      expect(host.lines.filter((l) => l.kind === 'missing-env')).toHaveLength(1)
    } finally {
      await host.stop()
    }
  })
  it('a value of one space counts as set', async () => {
    const host = await spawnHost({ env: { FIXTURE_REQUIRED: ' ' } })
    try {
      expect((await request(host, '/readyz', { token: null })).status).toBe(200)
    } finally {
      await host.stop()
    }
  })
})

describe('the env filter', () => {
  const env = {
    FIXTURE_OPTIONAL: 'opt',
    UNDECLARED_SECRET: 'leak',
    KINDGI_PACK_TENANT_HINT: 'k',
    LC_ALL: 'C',
    OTEL_SERVICE_NAME: 'svc',
    TZ: 'UTC',
    K_SERVICE: 'svc',
    AWS_REGION: 'eu-west-1',
    AWS_ROLE_ARN: 'arn:aws:iam::1:role/r',
    AZURE_CLIENT_ID: 'cid',
    CONTAINER_APP_NAME: 'app',
    AWS_SECRET_ACCESS_KEY: 'leak-aws',
    AZURE_CLIENT_SECRET: 'leak-azure',
    GOOGLE_APPLICATION_CREDENTIALS: '/leak/key.json',
    KINDGI_API_TOKEN: 'leak-kindgi',
  }
  const withheld = ['AWS_SECRET_ACCESS_KEY', 'AZURE_CLIENT_SECRET', 'GOOGLE_APPLICATION_CREDENTIALS', 'KINDGI_API_TOKEN', 'UNDECLARED_SECRET']
  it('on (the default): pack code sees only declared names, KINDGI_* but the tokens, and the platform list', async () => {
    const host = await spawnHost({ env })
    try {
      const names: string[] = (await invoke(host, 'env')).body.output.names
      expect(names).toEqual(
        expect.arrayContaining([
          'FIXTURE_OPTIONAL',
          'FIXTURE_REQUIRED',
          'KINDGI_PACK_TENANT_HINT',
          'LC_ALL',
          'OTEL_SERVICE_NAME',
          'TZ',
          'K_SERVICE',
          'AWS_REGION',
          'AWS_ROLE_ARN',
          'AZURE_CLIENT_ID',
          'CONTAINER_APP_NAME',
        ]),
      )
      for (const name of [...withheld, 'KINDGI_PACK_SERVICE_TOKEN']) expect(names).not.toContain(name)
    } finally {
      await host.stop()
    }
  })
  it('on: one env-dropped line at boot names what was withheld, sorted, without a value or the token', async () => {
    const host = await spawnHost({ env })
    try {
      const dropped = host.lines.filter((l) => l.kind === 'env-dropped')
      expect(dropped).toHaveLength(1)
      const names = dropped[0]!.names as string[]
      expect(names).toEqual(expect.arrayContaining(withheld))
      expect(names).toEqual([...names].sort())
      for (const name of ['FIXTURE_OPTIONAL', 'FIXTURE_REQUIRED', 'TZ', 'AWS_REGION', 'KINDGI_PACK_SERVICE_TOKEN']) expect(names).not.toContain(name)
      expect(JSON.stringify(dropped[0])).not.toMatch(/leak|test-token/)
    } finally {
      await host.stop()
    }
  })
  it('on: no env-dropped line when nothing was withheld', async () => {
    const unset = Object.fromEntries(
      Object.keys(baseEnv())
        .filter((name) => name !== 'PATH' && name !== 'HOME')
        .map((name) => [name, undefined]),
    )
    const host = await spawnHost({ env: { ...unset, TZ: 'UTC', FIXTURE_OPTIONAL: 'opt' } })
    try {
      expect(host.lines.filter((l) => l.kind === 'env-dropped')).toEqual([])
    } finally {
      await host.stop()
    }
  })
  it('off: pack code sees everything but the token, and there is no env-dropped line', async () => {
    const host = await spawnHost({ env: { ...env, KINDGI_PACK_ENV_FILTER: 'off' } })
    try {
      const names: string[] = (await invoke(host, 'env')).body.output.names
      expect(names).toEqual(expect.arrayContaining(withheld))
      expect(names).not.toContain('KINDGI_PACK_SERVICE_TOKEN')
      expect(host.lines.filter((l) => l.kind === 'env-dropped')).toEqual([])
    } finally {
      await host.stop()
    }
  })
})

describe('env-dropped under --watch', () => {
  const tempDir = tempDirs()
  /** Saves the index as editors do: a new file renamed over the old one. */
  function save(index: string, change: (index: { artifactVersion: string; env: { optional: string[] } }) => void): void {
    const parsed = JSON.parse(readFileSync(index, 'utf8'))
    change(parsed)
    writeFileSync(`${index}.tmp`, JSON.stringify(parsed, null, 2))
    renameSync(`${index}.tmp`, index)
  }
  it('a reload that withholds the same names writes no new line; one that withholds fewer writes them', async () => {
    const dir = tempDir('kph-env-watch-')
    cpSync(join(FIXTURES, 'reload-pack'), dir, { recursive: true })
    const index = join(dir, 'index.json')
    const host = await spawnHost({ args: ['--index', index, '--host', '127.0.0.1', '--watch'], env: { RELOAD_SECRET: 'leak' } })
    try {
      const dropped = () => host.lines.filter((l) => l.kind === 'env-dropped')
      expect(dropped()).toHaveLength(1)
      const first = dropped()[0]!.names as string[]
      expect(first).toContain('RELOAD_SECRET')

      save(index, (i) => (i.artifactVersion = '2'))
      await host.waitFor('reloaded', (l) => l.artifactVersion === '2')
      await sleep(200) // a line written with `reloaded` would have arrived by now
      expect(dropped()).toHaveLength(1)

      save(index, (i) => {
        i.artifactVersion = '3'
        i.env.optional = ['RELOAD_SECRET']
      })
      await host.waitFor('reloaded', (l) => l.artifactVersion === '3')
      const second = await host.waitFor('env-dropped', (l) => dropped().indexOf(l) === 1)
      expect(second.names).toEqual(first.filter((name) => name !== 'RELOAD_SECRET'))
      expect((await invoke(host, 'echo', { a: 1 })).status).toBe(200)
    } finally {
      await host.stop()
    }
  })
})
