// The env filter (docs/spec/CONTRACT.md §4): each platform group reaches pack code, static credentials are
// withheld unless declared, the service token never passes, and env-dropped says what was withheld.
import { describe, expect, it } from 'vitest'
import type { Log } from '../../src/log.js'
import type { PackIndex } from '../../src/pack-index.js'
import { envDroppedReporter, workerEnv } from '../../src/pool/worker-env.js'

function indexDeclaring(required: string[] = [], optional: string[] = []): PackIndex {
  return {
    v: 1,
    packId: 'p',
    packVersion: '1.0.0',
    artifactVersion: '1',
    publishedAt: '2026-01-01T00:00:00Z',
    tools: [],
    guardrails: [],
    env: { required, optional },
  }
}

/** Names each set to a value that spells them, so a test can also see values arrive intact. */
function envOf(names: string[]): Record<string, string> {
  return Object.fromEntries(names.map((name) => [name, `value of ${name}`]))
}

const GROUPS: Record<string, string[]> = {
  'process basics': ['PATH', 'HOME', 'HOSTNAME', 'USER', 'LANG', 'LANGUAGE', 'TZ', 'TMPDIR', 'TMP', 'TEMP', 'PWD', 'SHLVL', '_', 'LC_ALL', 'LC_CTYPE'],
  'runtime settings': ['NODE_ENV', 'NODE_OPTIONS', 'JAVA_HOME', 'JAVA_TOOL_OPTIONS', 'VIRTUAL_ENV', 'PYTHONPATH', 'PYTHONUNBUFFERED', 'PYTHON_VERSION'],
  'the port': ['PORT'],
  'proxies and certificates': [
    'HTTP_PROXY',
    'HTTPS_PROXY',
    'NO_PROXY',
    'ALL_PROXY',
    'http_proxy',
    'https_proxy',
    'no_proxy',
    'all_proxy',
    'NODE_EXTRA_CA_CERTS',
    'NODE_USE_SYSTEM_CA',
    'SSL_CERT_FILE',
    'SSL_CERT_DIR',
    'REQUESTS_CA_BUNDLE',
    'CURL_CA_BUNDLE',
    'AWS_CA_BUNDLE',
    'GRPC_DEFAULT_SSL_ROOTS_FILE_PATH',
  ],
  OpenTelemetry: ['OTEL_SERVICE_NAME', 'OTEL_EXPORTER_OTLP_ENDPOINT'],
  'Cloud Run': ['K_SERVICE', 'K_REVISION', 'K_CONFIGURATION', 'CLOUD_RUN_JOB', 'CLOUD_RUN_TASK_INDEX'],
  AWS: [
    'AWS_REGION',
    'AWS_DEFAULT_REGION',
    'AWS_CONTAINER_CREDENTIALS_RELATIVE_URI',
    'AWS_CONTAINER_CREDENTIALS_FULL_URI',
    'AWS_WEB_IDENTITY_TOKEN_FILE',
    'AWS_ROLE_ARN',
    'ECS_CONTAINER_METADATA_URI',
    'ECS_CONTAINER_METADATA_URI_V4',
  ],
  Azure: [
    'IDENTITY_ENDPOINT',
    'IDENTITY_HEADER',
    'AZURE_CLIENT_ID',
    'AZURE_TENANT_ID',
    'AZURE_FEDERATED_TOKEN_FILE',
    'AZURE_AUTHORITY_HOST',
    'CONTAINER_APP_NAME',
    'CONTAINER_APP_REVISION',
  ],
  'Kindgi (but the tokens)': ['KINDGI_PACK_TENANT_ID', 'KINDGI_PACK_SANDBOX'],
}

// Each under a name a passed prefix or name could be mistaken for (AWS_*, AZURE_*, GOOGLE_*, KINDGI_*).
const CREDENTIALS = [
  'AWS_SECRET_ACCESS_KEY',
  'AWS_ACCESS_KEY_ID',
  'AWS_SESSION_TOKEN',
  'AWS_SECURITY_TOKEN',
  'AWS_CONTAINER_AUTHORIZATION_TOKEN',
  'GOOGLE_APPLICATION_CREDENTIALS',
  'GOOGLE_API_KEY',
  'AZURE_CLIENT_SECRET',
  'AZURE_CLIENT_CERTIFICATE_PATH',
  'AZURE_CLIENT_CERTIFICATE_PASSWORD',
  'AZURE_PASSWORD',
  'KINDGI_API_TOKEN',
  'KINDGI_API_TOKEN_FILE',
]
const TOKENS = ['KINDGI_PACK_SERVICE_TOKEN', 'KINDGI_PACK_SERVICE_TOKEN_FILE']

describe('with the filter on', () => {
  for (const [group, names] of Object.entries(GROUPS)) {
    it(`lets pack code see ${group} with their values`, () => {
      const env = { ...envOf(names), UNDECLARED_THING: 'x' }
      expect(workerEnv(env, indexDeclaring(), true)).toEqual({ env: envOf(names), dropped: ['UNDECLARED_THING'] })
    })
  }
  it('withholds every static credential the index does not declare, and names each as dropped', () => {
    const { env, dropped } = workerEnv({ ...envOf(CREDENTIALS), PATH: '/bin' }, indexDeclaring(), true)
    expect(env).toEqual({ PATH: '/bin' })
    expect(dropped).toEqual([...CREDENTIALS].sort())
  })
  it('passes a credential the index declares, required or optional', () => {
    const index = indexDeclaring(['AWS_SECRET_ACCESS_KEY'], ['AZURE_CLIENT_SECRET'])
    const { env, dropped } = workerEnv(envOf(['AWS_SECRET_ACCESS_KEY', 'AZURE_CLIENT_SECRET', 'AWS_SESSION_TOKEN']), index, true)
    expect(env).toEqual(envOf(['AWS_SECRET_ACCESS_KEY', 'AZURE_CLIENT_SECRET']))
    expect(dropped).toEqual(['AWS_SESSION_TOKEN'])
  })
  it('never passes the service token, even declared, and does not list it as dropped', () => {
    const { env, dropped } = workerEnv(envOf(TOKENS), indexDeclaring(TOKENS, TOKENS), true)
    expect(env).toEqual({})
    expect(dropped).toEqual([])
  })
  it('gives the dropped names sorted, never a value', () => {
    const { dropped } = workerEnv({ ZED: 'z-secret', ALPHA: 'a-secret', Mixed: 'm', PATH: '/bin' }, indexDeclaring(), true)
    expect(dropped).toEqual(['ALPHA', 'Mixed', 'ZED'])
  })
  it('skips names whose value is undefined', () => {
    expect(workerEnv({ PATH: undefined, SECRET: undefined }, indexDeclaring(), true)).toEqual({ env: {}, dropped: [] })
  })
})

describe('with the filter off', () => {
  it('passes everything but the service token and drops nothing', () => {
    const names = [...CREDENTIALS, 'UNDECLARED_THING', 'PATH']
    expect(workerEnv({ ...envOf(names), ...envOf(TOKENS) }, indexDeclaring(), false)).toEqual({ env: envOf(names), dropped: [] })
  })
})

describe('the env-dropped reporter', () => {
  function recording(): { log: Log; lines: Array<{ kind: string; fields?: Record<string, unknown> }> } {
    const lines: Array<{ kind: string; fields?: Record<string, unknown> }> = []
    const record = (kind: string, fields?: Record<string, unknown>) => void lines.push({ kind, fields })
    return { log: { info: record, warn: record, error: record }, lines }
  }
  it('writes nothing when nothing was dropped', () => {
    const { log, lines } = recording()
    envDroppedReporter(log)([])
    expect(lines).toEqual([])
  })
  it('writes the names once, and again only when they change (a reload that drops none says so)', () => {
    const { log, lines } = recording()
    const report = envDroppedReporter(log)
    report(['A', 'B'])
    report(['A', 'B'])
    report(['B'])
    report([])
    report([])
    expect(lines).toEqual([
      { kind: 'env-dropped', fields: { names: ['A', 'B'] } },
      { kind: 'env-dropped', fields: { names: ['B'] } },
      { kind: 'env-dropped', fields: { names: [] } },
    ])
  })
})
