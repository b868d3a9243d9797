// In-worker guards installed before any pack module loads: network none (docs/spec/CONTRACT.md §6),
// no process.binding, and no signals to the service itself. They patch Node's built-in
// modules (the network ones as pack code first reaches each), so they are a guard, not a
// wall: the container's network policy and the permission model (KINDGI_PACK_SANDBOX=strict,
// which also refuses child processes and workers) are the walls. See docs/security.md.

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

// The guard runs again after pack code has run (as pack code first reaches a module), when pack
// code may have replaced anything of the realm's: what it uses is taken now, before any pack
// code, its tables have no prototype, and it walks arrays by index.
const { defineProperty, getOwnPropertyDescriptor, keys, setPrototypeOf } = Object
const apply = Reflect.apply
const startsWith = String.prototype.startsWith
const sliceString = String.prototype.slice
const builtin = process.getBuiltinModule
const moduleApi = builtin('node:module') as typeof import('node:module')
const syncBuiltinESMExports = moduleApi.syncBuiltinESMExports
const registerHooks = moduleApi.registerHooks
/** The raw signal call under `process.kill`, which pack code can reach too (installSignalGuard). */
const rawKill = (process as unknown as { _kill: (pid: number, signal: number) => number })._kill.bind(process)
const SIGKILL = 9

function table<T>(entries: Record<string, T>): Record<string, T> {
  return setPrototypeOf(entries, null) as Record<string, T>
}

const NETWORK = table<string[]>({
  net: ['connect', 'createConnection', 'createServer', 'Socket', 'Server', 'Stream', '_createServerHandle', 'BoundSocket'],
  tls: ['connect', 'createServer', 'Server', 'TLSSocket', 'createSecureContext'],
  http: ['request', 'get', 'createServer', 'Server', 'Agent', 'ClientRequest'],
  https: ['request', 'get', 'createServer', 'Server', 'Agent'],
  http2: ['connect', 'createServer', 'createSecureServer'],
  dgram: ['createSocket', 'Socket', '_createSocketHandle'],
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
    'resolveTlsa',
    'resolveTxt',
    'reverse',
    'Resolver',
    // It puts the real resolve functions back on the module.
    'setServers',
  ],
  // Node's older names for the modules under http and tls, public still.
  _http_agent: ['Agent'],
  _http_client: ['ClientRequest'],
  _http_server: ['Server'],
  _tls_wrap: ['connect', 'createServer', 'Server', 'TLSSocket'],
  _tls_common: ['createSecureContext'],
})
const SPAWN = table<string[]>({
  child_process: ['spawn', 'spawnSync', 'exec', 'execSync', 'execFile', 'execFileSync', 'fork', 'ChildProcess'],
  worker_threads: ['Worker'],
  cluster: ['fork'],
})
/** Guarded alone, as pack code reaches them: nothing else reaches the network through them. */
const SOLO = table<string[]>({ inspector: ['open'], 'inspector/promises': ['open'] })
/** Modules that reach a guarded one's functions or classes under another name. */
const REACHES = table<'net' | 'network' | 'spawn'>({
  'dns/promises': 'network',
  // Their classes extend net.Socket (Object.getPrototypeOf gives it).
  tty: 'net',
  _stream_wrap: 'net',
  // The test runner starts processes with the spawn it took as it loaded.
  test: 'spawn',
})
/**
 * Classes whose instances reach the network (or start a process) through these methods, refused
 * on their prototypes: however pack code reached the class (process.stdin.constructor, tty's
 * WriteStream, TLSSocket), its instances go through them.
 */
const PROTOTYPES = table<Record<string, string[]>>({
  net: { Socket: ['connect'], Server: ['listen'] },
  dgram: { Socket: ['bind', 'connect', 'send'] },
  child_process: { ChildProcess: ['spawn'] },
})
const guarded = table<boolean>({})

/**
 * Refuses what a module offers for the network (or to start a process, which could reach it)
 * the first time pack code reaches for it: loading every network module up front (tls and
 * http2 above all) was most of the start of a strict call's process. The first network module
 * reached guards them all, net first and in this order, as they were guarded up front: each
 * module then takes its lower layers' functions guarded when it loads and keeps them. A spawn
 * module guards the spawn modules, child_process first.
 */
function guardModule(id: string): void {
  const name = apply(startsWith, id, ['node:']) ? (apply(sliceString, id, [5]) as string) : id
  const reach = REACHES[name]
  if (reach === 'net') guardNet()
  else if (reach === 'network' || NETWORK[name] !== undefined) guardTable(NETWORK)
  else if (reach === 'spawn' || SPAWN[name] !== undefined) guardTable(SPAWN)
  else if (SOLO[name] !== undefined) {
    guardOne(name, SOLO[name] as string[])
    syncBuiltinESMExports()
  }
}

/**
 * net first. Node makes process.stdin, stdout and stderr on first use, from net.Socket over a
 * pipe (a strict process's channel and output): made before net.Socket is refused.
 */
function guardNet(): void {
  if (guarded.net === true) return
  for (let i = 0; i < STDIO.length; i++) {
    const get = stdioGetters[STDIO[i] as Stdio]
    if (get !== undefined) apply(get, process, [])
  }
  guardOne('net', NETWORK.net as string[])
  syncBuiltinESMExports()
}

function guardTable(modules: Record<string, string[]>): void {
  if (modules === NETWORK) guardNet()
  const names = keys(modules)
  for (let i = 0; i < names.length; i++) guardOne(names[i] as string, modules[names[i] as string] as string[])
  // What `import { connect } from 'node:net'` sees, too.
  syncBuiltinESMExports()
}

/** Its prototypes first: refusing its exports replaces the classes they are reached by. */
function guardOne(name: string, fields: string[]): void {
  if (guarded[name] === true) return
  const mod = builtin(`node:${name}`) as Record<string, unknown> | undefined
  if (mod === undefined) return // not in this release of Node
  const classes = PROTOTYPES[name]
  if (classes !== undefined) {
    const names = keys(classes)
    for (let i = 0; i < names.length; i++) {
      const cls = names[i] as string
      guardFields((mod[cls] as { prototype: Record<string, unknown> }).prototype, `${name}.${cls}.prototype`, classes[cls] as string[])
    }
  }
  guardFields(mod, name, fields)
  const promises = mod.promises as Record<string, unknown> | undefined
  if (name === 'dns' && promises !== undefined) guardFields(promises, 'dns.promises', fields)
  // Only now: a guard that failed half way is tried again at the next door, and that door fails meanwhile.
  guarded[name] = true
}

function guardFields(mod: Record<string, unknown>, name: string, fields: string[]): void {
  for (let i = 0; i < fields.length; i++) replace(mod, fields[i] as string, networkDenied(`${name}.${fields[i]}`))
}

function replace(target: Record<string, unknown>, field: string, value: unknown): void {
  if (typeof target[field] !== 'function') return
  // A descriptor with no prototype: a `get` or `set` pack code put on Object.prototype would
  // make it invalid, and the module would stay unguarded.
  defineProperty(target, field, table<unknown>({ value, writable: true, configurable: true, enumerable: true }) as PropertyDescriptor)
}

const STDIO = ['stdin', 'stdout', 'stderr'] as const
type Stdio = (typeof STDIO)[number]
/** Node's own getters for process.stdin, stdout and stderr (wrapped below). */
const stdioGetters = table<(() => unknown) | undefined>({})

/**
 * Every way pack code reaches a built-in module passes one of two doors: the module resolver
 * (import, import(), require, createRequire, Module._load), which runs the hook below, and
 * process.getBuiltinModule, wrapped. Each guards the module on its way out. process.stdin,
 * stdout and stderr are net sockets over pipes, reached with no door: reading them guards net.
 * Pack code's own resolve hooks would run before this one: registering one guards everything
 * first. module.register runs its hooks on a thread of their own, unguarded: refused.
 */
export function installNetworkGuard(): void {
  for (const name of ['fetch', 'WebSocket', 'EventSource']) {
    if (!(name in globalThis)) continue
    // Deleted first: redefining WebSocket in place makes Node load undici (and http2, tls) to build it.
    delete (globalThis as Record<string, unknown>)[name]
    defineProperty(globalThis, name, { value: networkDenied(name), writable: false, configurable: false })
  }
  registerHooks({
    resolve(specifier, context, nextResolve) {
      const resolved = nextResolve(specifier, context)
      if (apply(startsWith, resolved.url, ['node:'])) guardModule(resolved.url)
      return resolved
    },
  })
  const getBuiltinModule = (id: string): unknown => {
    if (typeof id === 'string') guardModule(id)
    return builtin(id)
  }
  defineProperty(process, 'getBuiltinModule', { value: getBuiltinModule, writable: false, configurable: false })
  for (const name of STDIO) {
    const own = getOwnPropertyDescriptor(process, name)
    if (own?.get === undefined || !own.configurable) continue
    stdioGetters[name] = own.get
    const get = own.get
    // Configurable, for libraries that stand in for stdio: a stand-in is no socket of Node's.
    defineProperty(process, name, {
      configurable: true,
      enumerable: own.enumerable,
      get: () => {
        guardNet()
        return apply(get, process, [])
      },
    })
  }
  const guardedRegisterHooks: typeof registerHooks = (hooks) => {
    guardTable(NETWORK)
    guardTable(SPAWN)
    guardTable(SOLO)
    return registerHooks(hooks)
  }
  defineProperty(moduleApi, 'registerHooks', { value: guardedRegisterHooks, writable: false, configurable: false })
  defineProperty(moduleApi, 'register', { value: networkDenied('module.register'), writable: false, configurable: false })
  syncBuiltinESMExports()
  // It becomes another program, with this process's every right.
  if (typeof process.execve === 'function') defineProperty(process, 'execve', { value: networkDenied('process.execve'), writable: false, configurable: false })
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
 * Warm pack code may signal processes it started, never the service (or the launcher above
 * it); strict pack code starts none, so it may signal no process at all (the front's pid, which
 * a strict process does not know, is found by trying pids with signal 0). Both ways in are
 * checked: `process.kill` and the raw `process._kill` under it, which `process.kill` itself
 * calls. A guard: the wall is the Landlock domain each pack process starts in (src/pool/landlock.ts).
 */
export function installSignalGuard(strict: boolean): void {
  const service = new Set([process.pid, process.ppid])
  const checked = (pid: number, signal: number) => {
    if (strict || service.has(Number(pid)) || !(Number(pid) > 0)) {
      const why = strict ? 'a strict call may not signal any process' : 'may not signal the pack service'
      const err = new Error(`ERR_PACK_SIGNAL_DENIED: tool "${currentTool}" ${why} (pid ${pid})`) as Denied
      err.code = 'ERR_PACK_SIGNAL_DENIED'
      throw err
    }
    return rawKill(pid, signal)
  }
  Object.defineProperty(process, '_kill', { value: checked, writable: false, configurable: false })
}

/**
 * Ends this process at once, as its spawner's SIGKILL would a moment later: a strict call's
 * process whose last message is written has nothing left to do, and Node's own exit (its
 * handlers, its teardown), which began meanwhile, cost it more than most calls do
 * (bench/PROFILE.md, twenty-eighth pass). What it wrote stays in its pipes for the spawner.
 * Here, not in strict-process.ts: it needs the raw signal call, which the signal guard closes
 * to everyone else in the process (a strict call may signal no process, itself included).
 */
export function endThisProcess(): void {
  rawKill(process.pid, SIGKILL)
}
