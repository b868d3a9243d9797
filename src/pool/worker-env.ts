// The environment pack code sees (docs/spec/CONTRACT.md §4). With the filter on: the names the index
// declares, KINDGI_* names but the tokens, and the platform list below; the rest is withheld
// and named (never valued) in one `env-dropped` line. The service token is never passed.
import type { Log } from '../log.js'
import type { PackIndex } from '../pack-index.js'

type Group = { names?: readonly string[]; prefixes?: readonly string[] }

// What platforms set for their workloads (issue 14 item 7). Static credentials are in no
// group and under no prefix here (AWS_SECRET_ACCESS_KEY, AWS_ACCESS_KEY_ID, AWS_SESSION_TOKEN,
// GOOGLE_APPLICATION_CREDENTIALS, AZURE_CLIENT_SECRET, AZURE_CLIENT_CERTIFICATE_PATH, …): a
// pack that needs one declares it. Hence exact names: AWS_, AZURE_ and GOOGLE_ are no prefix here.
const PLATFORM: readonly Group[] = [
  // Every Unix process: what the login, the shell and the locale leave behind.
  { names: ['PATH', 'HOME', 'HOSTNAME', 'USER', 'LANG', 'LANGUAGE', 'TZ', 'TMPDIR', 'TMP', 'TEMP', 'PWD', 'SHLVL', '_'], prefixes: ['LC_'] },
  // Language runtimes' own settings: Node, the JVM, Python (PYTHON: PYTHONPATH and PYTHON_*).
  // NODE_ also lets NODE_AUTH_TOKEN through (an npm token CI sets): the prefix, kept.
  { names: ['VIRTUAL_ENV'], prefixes: ['NODE_', 'JAVA_', 'PYTHON'] },
  // Every container platform (Cloud Run, App Runner, Container Apps, Heroku): the port to serve.
  { names: ['PORT'] },
  // Egress everywhere: proxies (curl reads the lowercase ones) and the certificates to trust
  // (OpenSSL's, Python requests', curl's, and those the AWS SDK and gRPC read).
  {
    names: [
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
  },
  // OpenTelemetry's SDK settings, whoever runs the collector (OTEL_EXPORTER_OTLP_HEADERS may
  // hold a vendor's API key: the prefix, kept; the README says so).
  { prefixes: ['OTEL_'] },
  // Google Cloud Run: a service's Knative names, a job's CLOUD_RUN_*.
  { names: ['K_SERVICE', 'K_REVISION', 'K_CONFIGURATION'], prefixes: ['CLOUD_RUN_'] },
  // AWS: the region, and where the SDK finds the task's or pod's role (ECS, EKS IRSA), not keys.
  {
    names: [
      'AWS_REGION',
      'AWS_DEFAULT_REGION',
      'AWS_CONTAINER_CREDENTIALS_RELATIVE_URI',
      'AWS_CONTAINER_CREDENTIALS_FULL_URI',
      'AWS_WEB_IDENTITY_TOKEN_FILE',
      'AWS_ROLE_ARN',
      'ECS_CONTAINER_METADATA_URI',
      'ECS_CONTAINER_METADATA_URI_V4',
    ],
  },
  // Azure: managed and workload identity (no client secret or certificate), and Container Apps.
  {
    names: ['IDENTITY_ENDPOINT', 'IDENTITY_HEADER', 'AZURE_CLIENT_ID', 'AZURE_TENANT_ID', 'AZURE_FEDERATED_TOKEN_FILE', 'AZURE_AUTHORITY_HOST'],
    prefixes: ['CONTAINER_APP_'],
  },
]
const PLATFORM_NAMES = new Set(PLATFORM.flatMap((group) => group.names ?? []))
const PLATFORM_PREFIXES = PLATFORM.flatMap((group) => group.prefixes ?? [])

/** Never passed, filter on or off, declared or not. */
const TOKEN_NAMES = new Set(['KINDGI_PACK_SERVICE_TOKEN', 'KINDGI_PACK_SERVICE_TOKEN_FILE'])
/** Kindgi's API credential (`register`'s): under KINDGI_, yet withheld by the filter like any credential. */
const KINDGI_CREDENTIALS = new Set(['KINDGI_API_TOKEN', 'KINDGI_API_TOKEN_FILE'])

/** Whether the filter lets an undeclared name through. */
function passesFilter(name: string): boolean {
  if (name.startsWith('KINDGI_')) return !TOKEN_NAMES.has(name) && !KINDGI_CREDENTIALS.has(name)
  return PLATFORM_NAMES.has(name) || PLATFORM_PREFIXES.some((prefix) => name.startsWith(prefix))
}

export type WorkerEnv = {
  env: Record<string, string>
  /** The names the filter withheld, sorted (empty when it is off); the token is not among them. */
  dropped: string[]
}

export function workerEnv(env: NodeJS.ProcessEnv, index: PackIndex, filter: boolean): WorkerEnv {
  const declared = new Set([...(index.env?.required ?? []), ...(index.env?.optional ?? [])])
  const out: Record<string, string> = {}
  const dropped: string[] = []
  for (const [name, value] of Object.entries(env)) {
    if (value === undefined || TOKEN_NAMES.has(name)) continue
    if (!filter || declared.has(name) || passesFilter(name)) out[name] = value
    else dropped.push(name)
  }
  return { env: out, dropped: dropped.sort() }
}

/**
 * Writes `env-dropped` when the withheld names differ from those the last line gave (at
 * start: from none). So a boot that withholds nothing writes nothing, a --watch reload that
 * withholds the same names stays quiet, and one that withholds none any more says `names: []`.
 */
export function envDroppedReporter(log: Log): (dropped: string[]) => void {
  let reported: string[] = []
  return (dropped) => {
    if (dropped.length === reported.length && dropped.every((name, i) => name === reported[i])) return
    reported = dropped
    log.info('env-dropped', { names: dropped })
  }
}

/** Required names that are unset or empty (a space counts as set), sorted. */
export function missingEnv(env: NodeJS.ProcessEnv, index: PackIndex): string[] {
  return (index.env?.required ?? []).filter((name) => env[name] === undefined || env[name] === '').sort()
}
