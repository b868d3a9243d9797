// The environment pack code sees (CONTRACT §4): with the filter on, only the names the
// index declares, KINDGI_* names (never the token), and a short platform list.
import type { PackIndex } from '../pack-index.js'

const PLATFORM = new Set([
  'PATH', 'HOME', 'HOSTNAME', 'USER', 'LANG', 'TZ', 'TMPDIR', 'NODE_ENV', 'NODE_OPTIONS', 'PORT',
  'HTTP_PROXY', 'HTTPS_PROXY', 'NO_PROXY', 'http_proxy', 'https_proxy', 'no_proxy', 'ALL_PROXY', 'all_proxy',
  'NODE_EXTRA_CA_CERTS', 'SSL_CERT_FILE', 'SSL_CERT_DIR', 'NODE_USE_SYSTEM_CA',
])
const TOKEN_NAMES = new Set(['KINDGI_PACK_SERVICE_TOKEN', 'KINDGI_PACK_SERVICE_TOKEN_FILE'])

export function workerEnv(env: NodeJS.ProcessEnv, index: PackIndex, filter: boolean): Record<string, string> {
  const declared = new Set([...(index.env?.required ?? []), ...(index.env?.optional ?? [])])
  const out: Record<string, string> = {}
  for (const [name, value] of Object.entries(env)) {
    if (value === undefined || TOKEN_NAMES.has(name)) continue
    if (!filter || declared.has(name) || PLATFORM.has(name) || name.startsWith('LC_') || name.startsWith('OTEL_') || name.startsWith('KINDGI_')) {
      out[name] = value
    }
  }
  return out
}

/** Required names that are unset or empty (a space counts as set), sorted. */
export function missingEnv(env: NodeJS.ProcessEnv, index: PackIndex): string[] {
  return (index.env?.required ?? []).filter((name) => env[name] === undefined || env[name] === '').sort()
}
