// In-worker guards installed before any pack module loads: network none (docs/spec/CONTRACT.md §6),
// no process.binding, and no signals to the service itself. They patch Node's built-in
// modules, so they are a guard, not a wall: the container's network policy and the permission
// model (KINDGI_PACK_SANDBOX=strict, which also refuses child processes and workers) are the
// walls. See docs/security.md.

let currentTool = '(loading)'

/** Which tool or check the worker runs now, for the guards' error messages. */
export function setCurrentTarget(id: string): void {
  currentTool = id
}

type Denied = Error & { code: string }

function denial(code: string, why: (what: string) => string): (what: string) => (...args: unknown[]) => never {
  return (what) =>
    function denied(): never {
      const err = new Error(`${code}: ${why(what)}`) as Denied
      err.code = code
      throw err
    }
}

const networkDenied = denial('ERR_PACK_NETWORK_DENIED', (what) => `tool "${currentTool}" declares network none (${what} refused)`)

const NETWORK: Record<string, string[]> = {
  net: ['connect', 'createConnection', 'createServer', 'Socket', 'Server', 'Stream', '_createServerHandle'],
  tls: ['connect', 'createServer', 'Server', 'TLSSocket', 'createSecureContext'],
  http: ['request', 'get', 'createServer', 'Server', 'Agent', 'ClientRequest'],
  https: ['request', 'get', 'createServer', 'Server', 'Agent'],
  http2: ['connect', 'createServer', 'createSecureServer'],
  dgram: ['createSocket', 'Socket'],
  dns: [
    'lookup',
    'lookupService',
    'resolve',
    'resolve4',
    'resolve6',
    'resolveAny',
    'resolveCaa',
    'resolveCname',
    'resolveMx',
    'resolveNaptr',
    'resolveNs',
    'resolvePtr',
    'resolveSoa',
    'resolveSrv',
    'resolveTxt',
    'reverse',
    'Resolver',
  ],
}
const SPAWN: Record<string, string[]> = {
  child_process: ['spawn', 'spawnSync', 'exec', 'execSync', 'execFile', 'execFileSync', 'fork'],
  worker_threads: ['Worker'],
}

function patch(table: Record<string, string[]>, deny: (what: string) => (...args: unknown[]) => never): void {
  for (const [name, fields] of Object.entries(table)) {
    const mod = process.getBuiltinModule(`node:${name}`) as Record<string, unknown>
    for (const field of fields) replace(mod, field, deny(`${name}.${field}`))
    const promises = mod.promises as Record<string, unknown> | undefined
    if (name === 'dns' && promises !== undefined) for (const field of fields) replace(promises, field, deny(`dns.promises.${field}`))
  }
}

function replace(target: Record<string, unknown>, field: string, value: unknown): void {
  if (typeof target[field] !== 'function') return
  Object.defineProperty(target, field, { value, writable: true, configurable: true, enumerable: true })
}

export function installNetworkGuard(): void {
  patch(NETWORK, networkDenied)
  patch(SPAWN, networkDenied)
  for (const name of ['fetch', 'WebSocket', 'EventSource']) {
    if (name in globalThis) Object.defineProperty(globalThis, name, { value: networkDenied(name), writable: false, configurable: false })
  }
  // What `import { connect } from 'node:net'` sees, too (node:module is loaded only here).
  const { syncBuiltinESMExports } = process.getBuiltinModule('node:module') as typeof import('node:module')
  syncBuiltinESMExports()
}

/**
 * process.binding hands out Node's raw internals, deprecated for years: misused (a wrong
 * argument to the fs binding) it fails a native assertion that aborts the whole service,
 * not just the worker. No pack needs it; every worker refuses it.
 */
export function installBindingGuard(): void {
  const refuse = () => {
    const err = new Error(`ERR_PACK_BINDING_DENIED: tool "${currentTool}" may not use process.binding`) as Denied
    err.code = 'ERR_PACK_BINDING_DENIED'
    throw err
  }
  Object.defineProperty(process, 'binding', { value: refuse, writable: false, configurable: false })
}

/**
 * Pack code may signal processes it started, never the service (or the launcher above it).
 * Both ways in are checked: `process.kill` and the raw `process._kill` under it, which
 * `process.kill` itself calls. A guard: the kernel lets a process signal any process of its user.
 */
export function installSignalGuard(): void {
  const raw = (process as unknown as { _kill: (pid: number, signal: number) => number })._kill.bind(process)
  const service = new Set([process.pid, process.ppid])
  const checked = (pid: number, signal: number) => {
    if (service.has(Number(pid)) || !(Number(pid) > 0)) {
      const err = new Error(`ERR_PACK_SIGNAL_DENIED: tool "${currentTool}" may not signal the pack service (pid ${pid})`) as Denied
      err.code = 'ERR_PACK_SIGNAL_DENIED'
      throw err
    }
    return raw(pid, signal)
  }
  Object.defineProperty(process, '_kill', { value: checked, writable: false, configurable: false })
}
