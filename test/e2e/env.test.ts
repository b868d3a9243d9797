// CONTRACT §4: required env names, the strict and warn checks, and the env filter.
import { describe, expect, it } from 'vitest'
import { invoke, request, spawnHost } from '../helpers/host.js'

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
  const env = { FIXTURE_OPTIONAL: 'opt', UNDECLARED_SECRET: 'leak', KINDGI_PACK_TENANT_HINT: 'k', LC_ALL: 'C', OTEL_SERVICE_NAME: 'svc', TZ: 'UTC' }
  it('on (the default): pack code sees only declared names, KINDGI_* but the token, and the platform list', async () => {
    const host = await spawnHost({ env })
    try {
      const names: string[] = (await invoke(host, 'env')).body.output.names
      expect(names).toEqual(expect.arrayContaining(['FIXTURE_OPTIONAL', 'FIXTURE_REQUIRED', 'KINDGI_PACK_TENANT_HINT', 'LC_ALL', 'OTEL_SERVICE_NAME', 'TZ']))
      expect(names).not.toContain('UNDECLARED_SECRET')
      expect(names).not.toContain('KINDGI_PACK_SERVICE_TOKEN')
    } finally {
      await host.stop()
    }
  })
  it('off: pack code sees everything but the token', async () => {
    const host = await spawnHost({ env: { ...env, KINDGI_PACK_ENV_FILTER: 'off' } })
    try {
      const names: string[] = (await invoke(host, 'env')).body.output.names
      expect(names).toContain('UNDECLARED_SECRET')
      expect(names).not.toContain('KINDGI_PACK_SERVICE_TOKEN')
    } finally {
      await host.stop()
    }
  })
})
