// Reads the command line and the environment once, at start, into a typed Config.
// Every bad input is collected so the operator sees all of them in one config-invalid line.
import { readFileSync } from 'node:fs'
import { availableParallelism } from 'node:os'
import { dirname, resolve } from 'node:path'
import { parseArgv, type Args } from './args.js'
import { readLogFormat } from './log-format.js'
import { RUNTIME, runtimeProblem, type Runtime } from './runtime.js'
import { POSTURES, type Posture } from './protocol/runnable-entry.js'

/** Bounds on the HTTP front (README, configuration): how long a caller may take, how many may connect. */
export type FrontLimits = {
  /** KINDGI_PACK_HEADERS_TIMEOUT_MS: from a request's first byte to the end of its headers. */
  headersTimeoutMs: number
  /** KINDGI_PACK_BODY_TIMEOUT_MS: to read an invoke's whole body, once its headers are in. */
  bodyTimeoutMs: number
  /** KINDGI_PACK_KEEPALIVE_TIMEOUT_MS: how long an idle keep-alive connection stays open. */
  keepAliveTimeoutMs: number
  /** KINDGI_PACK_MAX_CONNECTIONS: open connections at once; past it a new one takes the oldest tokenless one's place, or is closed unanswered. */
  maxConnections: number
}

export const FRONT_DEFAULTS: FrontLimits = {
  headersTimeoutMs: 10_000,
  bodyTimeoutMs: 30_000,
  // Above the usual load balancer idle timeouts (60 s), so the balancer closes first.
  keepAliveTimeoutMs: 65_000,
  maxConnections: 1_024,
}

const FRONT_SETTINGS: Array<{ name: string; key: keyof FrontLimits; min: number; max: number }> = [
  { name: 'KINDGI_PACK_HEADERS_TIMEOUT_MS', key: 'headersTimeoutMs', min: 100, max: 600_000 },
  { name: 'KINDGI_PACK_BODY_TIMEOUT_MS', key: 'bodyTimeoutMs', min: 100, max: 3_600_000 },
  { name: 'KINDGI_PACK_KEEPALIVE_TIMEOUT_MS', key: 'keepAliveTimeoutMs', min: 100, max: 3_600_000 },
  { name: 'KINDGI_PACK_MAX_CONNECTIONS', key: 'maxConnections', min: 1, max: 1_000_000 },
]

function readFrontLimits(env: NodeJS.ProcessEnv, problems: string[]): FrontLimits {
  const limits = { ...FRONT_DEFAULTS }
  for (const { name, key, min, max } of FRONT_SETTINGS) {
    const raw = env[name]
    if (raw === undefined || raw === '') continue
    const n = integerIn(raw, min, max)
    if (n === undefined) problems.push(`${name} must be an integer from ${min} to ${max}, not "${raw}"`)
    else limits[key] = n
  }
  return limits
}

export type Config = {
  indexPath: string
  moduleRoot: string
  host: string | undefined
  port: number
  token: string
  maxConcurrency: number
  /** Calls that may compute on worker threads at once; more start only while calls wait on I/O. */
  workerThreads: number
  tenantId: string | undefined
  envCheck: 'strict' | 'warn'
  envFilter: boolean
  sandbox: Posture
  watch: boolean
  /** KINDGI_PACK_SERVICE_TOKEN_FILE as given, when the token came from a file: pack code may never read it. */
  tokenFile: string | undefined
  /** `--bundle-map FILE`, resolved: source paths of the index → bundles under the module root. */
  bundleMap: string | undefined
  /** Port of the separate Prometheus /metrics server; undefined when metrics are off. */
  metricsPort: number | undefined
  front: FrontLimits
}

export type ConfigResult = { kind: 'ok'; config: Config } | { kind: 'error'; problems: string[] }

const FLAGS = ['index', 'module-root', 'host', 'bundle-map'] as const
const SWITCHES = ['watch'] as const
type Flag = (typeof FLAGS)[number]

export function parseArgs(argv: string[]): Args<Flag, (typeof SWITCHES)[number]> {
  return parseArgv(argv, {
    flags: FLAGS,
    switches: SWITCHES,
    hint: 'use --index FILE, --module-root DIR, --host ADDR, --bundle-map FILE, --watch',
    valueNames: { 'bundle-map': 'path' },
  })
}

function integerIn(raw: string, min: number, max: number): number | undefined {
  if (!/^\d+$/.test(raw.trim())) return undefined
  const n = Number(raw.trim())
  return Number.isSafeInteger(n) && n >= min && n <= max ? n : undefined
}

function oneOf<T extends string>(raw: string | undefined, allowed: readonly T[], fallback: T): T | undefined {
  if (raw === undefined || raw === '') return fallback
  return (allowed as readonly string[]).includes(raw) ? (raw as T) : undefined
}

/** A token is printable ASCII without spaces (0x21–0x7E), after trimming. */
export function tokenProblem(token: string): string | undefined {
  if (token === '') return 'is empty'
  if (!/^[\x21-\x7e]+$/.test(token)) return 'holds characters outside printable ASCII (0x21-0x7E)'
  return undefined
}

function readToken(env: NodeJS.ProcessEnv, problems: string[]): string {
  const fromVar = env.KINDGI_PACK_SERVICE_TOKEN
  const file = env.KINDGI_PACK_SERVICE_TOKEN_FILE
  if (file !== undefined && file !== '') {
    if (fromVar !== undefined && fromVar.trim() !== '') {
      problems.push('Set KINDGI_PACK_SERVICE_TOKEN or KINDGI_PACK_SERVICE_TOKEN_FILE, not both')
      return ''
    }
    let raw: string
    try {
      raw = readFileSync(file, 'utf8')
    } catch (err) {
      problems.push(`KINDGI_PACK_SERVICE_TOKEN_FILE ${file} cannot be read: ${(err as Error).message}`)
      return ''
    }
    const token = raw.trim()
    const bad = tokenProblem(token)
    if (bad !== undefined) problems.push(`The token in KINDGI_PACK_SERVICE_TOKEN_FILE ${bad}`)
    return token
  }
  if (fromVar === undefined) {
    problems.push('KINDGI_PACK_SERVICE_TOKEN is required (or KINDGI_PACK_SERVICE_TOKEN_FILE naming a file that holds it)')
    return ''
  }
  const token = fromVar.trim()
  const bad = tokenProblem(token)
  if (bad !== undefined) problems.push(`KINDGI_PACK_SERVICE_TOKEN ${bad}`)
  return token
}

export function loadConfig(argv: string[], env: NodeJS.ProcessEnv, runtime: Runtime = RUNTIME): ConfigResult {
  const { flags, switches, problems } = parseArgs(argv)
  const tooOld = runtimeProblem(runtime)
  if (tooOld !== undefined) problems.push(tooOld)

  const indexPath = resolve(flags.index ?? (env.KINDGI_PACK_INDEX || '/app/index.json'))
  const moduleRoot = resolve(flags['module-root'] ?? dirname(indexPath))

  let port = 8080
  if (env.PORT !== undefined && env.PORT !== '') {
    const p = integerIn(env.PORT, 0, 65535)
    if (p === undefined) problems.push(`PORT must be an integer from 0 to 65535, not "${env.PORT}"`)
    else port = p
  }

  let metricsPort: number | undefined
  const rawMetrics = env.KINDGI_PACK_METRICS_PORT
  if (rawMetrics !== undefined && rawMetrics !== '') {
    metricsPort = integerIn(rawMetrics, 0, 65535)
    if (metricsPort === undefined) problems.push(`KINDGI_PACK_METRICS_PORT must be an integer from 0 to 65535, not "${rawMetrics}"`)
    // Two servers cannot share a fixed port; 0 twice is fine (each gets its own free one).
    else if (metricsPort !== 0 && metricsPort === port) problems.push(`KINDGI_PACK_METRICS_PORT must differ from PORT (both ${port})`)
  }

  let maxConcurrency = 32
  const rawCap = env.KINDGI_PACK_SERVICE_MAX_CONCURRENCY
  if (rawCap !== undefined && rawCap !== '') {
    const n = integerIn(rawCap, 1, 100000)
    if (n === undefined) problems.push(`KINDGI_PACK_SERVICE_MAX_CONCURRENCY must be an integer from 1 to 100000, not "${rawCap}"`)
    else maxConcurrency = n
  }

  // The CPU count is wrong under a container's CPU quota: the operator can say how many cores.
  let workerThreads = availableParallelism()
  const rawThreads = env.KINDGI_PACK_WORKER_THREADS
  if (rawThreads !== undefined && rawThreads !== '') {
    const n = integerIn(rawThreads, 1, 1024)
    if (n === undefined) problems.push(`KINDGI_PACK_WORKER_THREADS must be an integer from 1 to 1024, not "${rawThreads}"`)
    else workerThreads = n
  }

  const envCheck = oneOf(env.KINDGI_PACK_ENV_CHECK, ['strict', 'warn'] as const, 'strict')
  if (envCheck === undefined) problems.push(`KINDGI_PACK_ENV_CHECK must be "strict" or "warn", not "${env.KINDGI_PACK_ENV_CHECK}"`)
  const envFilter = oneOf(env.KINDGI_PACK_ENV_FILTER, ['on', 'off'] as const, 'on')
  if (envFilter === undefined) problems.push(`KINDGI_PACK_ENV_FILTER must be "on" or "off", not "${env.KINDGI_PACK_ENV_FILTER}"`)
  const sandbox = oneOf(env.KINDGI_PACK_SANDBOX, POSTURES, 'none')
  if (sandbox === undefined) {
    problems.push(`KINDGI_PACK_SANDBOX must be "none", "context-isolated" or "strict", not "${env.KINDGI_PACK_SANDBOX}"`)
  }

  const logFormat = readLogFormat(env.KINDGI_PACK_LOG_FORMAT)
  if (logFormat.kind === 'error') problems.push(logFormat.problem)

  if (/--max-old-space-size/.test(env.NODE_OPTIONS ?? '')) {
    problems.push("NODE_OPTIONS sets --max-old-space-size, which silently overrides every worker's memMB heap limit: remove it")
  }

  const tenant = env.KINDGI_PACK_TENANT_ID
  const front = readFrontLimits(env, problems)
  const token = readToken(env, problems)

  if (problems.length > 0) return { kind: 'error', problems }
  return {
    kind: 'ok',
    config: {
      indexPath,
      moduleRoot,
      host: flags.host,
      port,
      token,
      maxConcurrency,
      workerThreads,
      tenantId: tenant === undefined || tenant === '' ? undefined : tenant,
      envCheck: envCheck as 'strict' | 'warn',
      envFilter: envFilter === 'on',
      sandbox: sandbox as Posture,
      watch: switches.has('watch'),
      tokenFile: env.KINDGI_PACK_SERVICE_TOKEN_FILE === undefined || env.KINDGI_PACK_SERVICE_TOKEN_FILE === '' ? undefined : env.KINDGI_PACK_SERVICE_TOKEN_FILE,
      bundleMap: flags['bundle-map'] === undefined ? undefined : resolve(flags['bundle-map']),
      metricsPort,
      front,
    },
  }
}
