// In-worker guards installed before any pack module loads: network none (docs/spec/CONTRACT.md §6),
// no process.binding, and no signals to the service itself. They patch Node's built-in
// modules (the network ones as pack code first reaches each), so they are a guard, not a wall: the container's network policy and the permission
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
  // Node's older names for the modules under http and tls, public still.
  _http_agent: ['Agent'],
  _http_client: ['ClientRequest'],
  _http_server: ['Server'],
  _tls_wrap: ['connect', 'createServer', 'Server', 'TLSSocket'],
}
const SPAWN: Record<string, string[]> = {
  child_process: ['spawn', 'spawnSync', 'exec', 'execSync', 'execFile', 'execFileSync', 'fork'],
  worker_threads: ['Worker'],
  cluster: ['fork'],
}
/** Names under which a guarded module is reached as well. */
const SAME_MODULE: Record<string, string> = { 'dns/promises': 'dns' }

const builtin = process.getBuiltinModule
const guarded = new Set<string>()

/**
 * Refuses what a module offers for the network (or to start a process, which could reach it)
 * the first time pack code reaches for it: loading every network module up front (tls and
 * http2 above all) was most of the start of a strict call's process. The first network module
 * reached guards them all, net first and in this order, as they were guarded up front: each
 * module then takes its lower layers' functions guarded when it loads and keeps them
 * (http's Agent.prototype.createConnection is net.createConnection, taken at load).
 */
function guardModule(id: string): void {
  const bare = id.startsWith('node:') ? id.slice(5) : id
  const name = SAME_MODULE[bare] ?? bare
  if (name in NETWORK) guardAll(NETWORK)
  else if (name in SPAWN) guardAll({ [name]: SPAWN[name] as string[] })
}

function guardAll(table: Record<string, string[]>): void {
  const names = Object.keys(table).filter((name) => !guarded.has(name))
  if (names.length === 0) return
  for (const name of names) guarded.add(name)
  if (names.includes('net')) {
    // Node makes process.stdin, stdout and stderr on first use, from net.Socket over a pipe
    // (a strict process's channel and output): make them before net.Socket is refused.
    void process.stdin
    void process.stdout
    void process.stderr
  }
  for (const name of names) {
    const fields = table[name] as string[]
    const mod = builtin(`node:${name}`) as Record<string, unknown>
    for (const field of fields) replace(mod, field, networkDenied(`${name}.${field}`))
    const promises = mod.promises as Record<string, unknown> | undefined
    if (name === 'dns' && promises !== undefined) for (const field of fields) replace(promises, field, networkDenied(`dns.promises.${field}`))
  }
  // What `import { connect } from 'node:net'` sees, too.
  ;(builtin('node:module') as typeof import('node:module')).syncBuiltinESMExports()
}

function replace(target: Record<string, unknown>, field: string, value: unknown): void {
  if (typeof target[field] !== 'function') return
  Object.defineProperty(target, field, { value, writable: true, configurable: true, enumerable: true })
}

/**
 * Every way pack code reaches a built-in module passes one of two doors: the module resolver
 * (import, import(), require, createRequire, Module._load), which runs the hook below, and
 * process.getBuiltinModule, wrapped. Each guards the module on its way out.
 */
export function installNetworkGuard(): void {
  for (const name of ['fetch', 'WebSocket', 'EventSource']) {
    if (!(name in globalThis)) continue
    // Deleted first: redefining WebSocket in place makes Node load undici (and http2, tls) to build it.
    delete (globalThis as Record<string, unknown>)[name]
    Object.defineProperty(globalThis, name, { value: networkDenied(name), writable: false, configurable: false })
  }
  const { registerHooks } = builtin('node:module') as typeof import('node:module')
  registerHooks({
    resolve(specifier, context, nextResolve) {
      const resolved = nextResolve(specifier, context)
      if (resolved.url.startsWith('node:')) guardModule(resolved.url)
      return resolved
    },
  })
  const getBuiltinModule = (id: string): unknown => {
    if (typeof id === 'string') guardModule(id)
    return builtin(id)
  }
  Object.defineProperty(process, 'getBuiltinModule', { value: getBuiltinModule, writable: false, configurable: false })
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
