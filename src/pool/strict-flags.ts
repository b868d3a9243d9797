// What a strict call's process may do (issue 16), as Node's permission model and the kernel
// enforce it from outside the code it runs: read the host's own files and the pack, read and
// write only its own call's folder (no other call's, whatever its name), start no process or worker,
// load no addon, no node:sqlite (which the permission model does not check), and, where the
// runtime gates the network (Node >= 25), no network at all for a tool that declares none.
// memMB becomes V8's heap limit and the process's data limit (RLIMIT_DATA, through the shell's
// ulimit), which counts SharedArrayBuffers, Buffers and every other allocation. Every pack
// process, strict or warm, starts in a Landlock domain of its own where the kernel has one
// (landlock.ts): it can signal, reach the abstract sockets of, or write the /proc entries of no
// process outside it.
import { lstatSync, readdirSync, realpathSync } from 'node:fs'
import { dirname, join, relative, resolve, sep } from 'node:path'
import { fileURLToPath } from 'node:url'
import type { Config } from '../config.js'
import { RUNTIME, type Runtime } from '../runtime.js'
import { CALL_FOLDER_VARIABLE, inLandlock, type Landlock, landlock } from './landlock.js'

/** Marks a process that runs pack code (tests find them by it, as the memory scan does). */
export const PACK_PROCESS_MARKER = '--kindgi-pack-process'

/** The host's own files: dist/ and node_modules/ live under the package root. */
const PACKAGE_ROOT = resolve(dirname(fileURLToPath(import.meta.url)), '..', '..', '..')

function real(path: string): string {
  try {
    return realpathSync.native(path)
  } catch {
    return path
  }
}

function inside(path: string, folder: string): boolean {
  const rel = relative(folder, path)
  return rel === '' || (!rel.startsWith('..') && !rel.startsWith(sep))
}

/** What pack code may read under strict: the host, the pack, the index. */
export function readableRoots(config: Pick<Config, 'moduleRoot' | 'indexPath'>): string[] {
  return [...new Set([PACKAGE_ROOT, real(PACKAGE_ROOT), config.moduleRoot, real(config.moduleRoot), config.indexPath, real(config.indexPath)])]
}

/**
 * The system's files that Node and the C library read in a strict call's process (libraries,
 * certificates, name resolution, time zones, users): with Node's own install and the roots,
 * all it may read by the kernel's wall (landlock-exec --read). Not /etc whole, /run or /var:
 * where secrets are mounted.
 */
const SYSTEM_READS = [
  '/usr',
  '/lib',
  '/lib32',
  '/lib64',
  '/libx32',
  '/bin',
  '/sbin',
  '/dev',
  '/proc',
  '/sys',
  '/etc/ssl',
  '/etc/ca-certificates',
  '/etc/pki',
  '/etc/alternatives',
  '/etc/ld.so.cache',
  '/etc/ld.so.conf',
  '/etc/ld.so.conf.d',
  '/etc/resolv.conf',
  '/etc/hosts',
  '/etc/nsswitch.conf',
  '/etc/gai.conf',
  '/etc/host.conf',
  '/etc/services',
  '/etc/protocols',
  '/etc/localtime',
  '/etc/timezone',
  '/etc/passwd',
  '/etc/group',
  '/etc/os-release',
]

/** Node's install (the folder above its bin/), found once: every strict start asks. */
let nodeInstall: string | undefined

/** What strictReads gave for a set of roots (every strict start asks, and the roots change only with a reload). */
const readsOfRoots = new Map<string, string[]>()

/**
 * Everything a strict call's process may read, by the kernel's wall: the roots, the
 * `package.json` files above them, Node's install, the system's files. Node reads the nearest
 * `package.json` above a module for its type (and its `imports`) past its own permission
 * model; a pack kept in a folder of a larger project (a monorepo's `package.json` above the
 * module root) failed to load every strict tool, "Cannot read package config … permission
 * denied", once the kernel refused it (stop 39).
 */
export function strictReads(readRoots: readonly string[]): string[] {
  const key = readRoots.join('\0')
  const known = readsOfRoots.get(key)
  if (known !== undefined) return known
  nodeInstall ??= dirname(dirname(real(process.execPath)))
  const reads = [...new Set([...readRoots, ...packageScopes(readRoots), nodeInstall, ...SYSTEM_READS])]
  readsOfRoots.set(key, reads)
  return reads
}

/** The `package.json` files in the folders above each root, as they are now (not the folders: only those files). */
function packageScopes(roots: readonly string[]): string[] {
  const found: string[] = []
  for (const root of roots) {
    for (let folder = dirname(root); ; folder = dirname(folder)) {
      const file = join(folder, 'package.json')
      if (isFile(file) && !roots.some((r) => inside(file, r))) found.push(file)
      if (dirname(folder) === folder) break
    }
  }
  return found
}

function isFile(path: string): boolean {
  try {
    return lstatSync(path).isFile()
  } catch {
    return false
  }
}

/** Which postures a pack's tools run in: strict calls read the roots, warm code all but the token's folder. */
export type PackPostures = { strict: boolean; warm: boolean }

/**
 * A token file pack code could read defeats the point, and one whose folder holds what warm
 * code must read (warmWalls hides that folder from it) leaves the pack unable to load: both
 * are refused, naming the file. Strict tools in a service of another posture read the roots
 * too (a docs review, stop 38: such a tool read a token file in its pack's folder).
 */
export function tokenFileProblem(config: Pick<Config, 'moduleRoot' | 'indexPath'>, tokenFile: string | undefined, postures: PackPostures): string | undefined {
  if (tokenFile === undefined || tokenFile === '') return undefined
  const file = real(resolve(tokenFile))
  const roots = readableRoots(config)
  const exposed = postures.strict ? strictReads(roots).find((root) => inside(file, root)) : undefined
  if (exposed !== undefined) {
    return `KINDGI_PACK_SERVICE_TOKEN_FILE ${tokenFile} lies inside ${exposed}, which a strict tool's code may read: mount the secret elsewhere`
  }
  const hidden = postures.warm ? tokenFolders(tokenFile) : []
  const held = roots.find((root) => hidden.some((folder) => inside(root, folder)))
  if (held === undefined) return undefined
  return `KINDGI_PACK_SERVICE_TOKEN_FILE ${tokenFile} lies in a folder that holds ${held}: warm pack code may read nothing in the token file's folder, so it could not load the pack; mount the secret elsewhere`
}

/** The token file's folder, as given and with links resolved: warm pack code reads neither. */
function tokenFolders(tokenFile: string): string[] {
  return [dirname(resolve(tokenFile)), dirname(real(resolve(tokenFile)))]
}

export type StrictLimits = {
  readRoots: string[]
  networkNone: boolean
  memMB: number | undefined
  /** The process's own data segment before any pack code (bytes), when known: the data limit adds memMB to it. */
  dataBaseline: number | undefined
}

/** Room above memMB for what V8 keeps outside the old generation (young generation, code). */
const DATA_SLACK_MB = 48

/** The command (program and arguments) that starts a strict call's process running `entry`. */
/**
 * SIGUSR1 opens a Node process's inspector (on 127.0.0.1:9229) for anyone who can signal it,
 * and every process of the service's user can: pack code would evaluate code in whatever
 * process it signalled. No process of the host opens it so.
 */
export const NO_DEBUG_SIGNAL = '--disable-sigusr1'

/** Its call folder's grants come in its environment (callFolderEnv), not on this command line. */
export function strictCommand(entry: string, limits: StrictLimits, runtime: Runtime = RUNTIME, wall: Landlock = landlock()): string[] {
  const node = [
    NO_DEBUG_SIGNAL,
    runtime.permissionFlag,
    ...limits.readRoots.map((p) => `--allow-fs-read=${p}`),
    ...(runtime.permissionGatesNet && !limits.networkNone ? ['--allow-net'] : []),
    '--no-addons',
    '--no-experimental-sqlite',
    '--disable-warning=ExperimentalWarning',
    '--disable-warning=SecurityWarning',
    ...(limits.memMB === undefined
      ? []
      : [`--max-old-space-size=${limits.memMB}`, `--max-semi-space-size=${Math.max(1, Math.min(16, Math.floor(limits.memMB / 8)))}`]),
    entry,
    PACK_PROCESS_MARKER,
  ]
  const walled = { noNetwork: limits.networkNone, callFolder: true, reads: strictReads(limits.readRoots) }
  if (limits.memMB === undefined || limits.dataBaseline === undefined) return inLandlock([process.execPath, ...node], walled, wall)
  const dataKiB = Math.ceil(limits.dataBaseline / 1024) + (limits.memMB + DATA_SLACK_MB) * 1024
  // The shell sets the limit on itself, then becomes node: the limit holds from node's first instruction.
  return inLandlock(['/bin/sh', '-c', `ulimit -d ${dataKiB} && exec "$0" "$@"`, process.execPath, ...node], walled, wall)
}

/**
 * `env` with the grants for a strict process's one call folder (ctx.tmpDir, made before its
 * call) added to NODE_OPTIONS: the folder and what lies below it, granted before it exists (a
 * bare path is a file's); and the folder for the kernel's wall (landlock-exec --call-folder,
 * which takes it out of the environment before Node starts). Not on the command line: /proc/<pid>/cmdline is readable by every
 * process of the service's user, and a warm tool's child process read strict calls' folder names
 * there, past the root that cannot be listed (a review, stop 27); /proc/<pid>/environ is read
 * only through a ptrace check, which the process's Landlock domain refuses to any other.
 */
export function callFolderEnv(folder: string, env: Readonly<Record<string, string>>): Record<string, string> {
  const quoted = (flag: string) => `"${flag.replaceAll('\\', '\\\\').replaceAll('"', '\\"')}"`
  const paths = [folder, `${folder}/*`]
  const grants = [...paths.map((p) => `--allow-fs-read=${p}`), ...paths.map((p) => `--allow-fs-write=${p}`)].map(quoted).join(' ')
  const options = env.NODE_OPTIONS === undefined || env.NODE_OPTIONS === '' ? grants : `${env.NODE_OPTIONS} ${grants}`
  // os.tmpdir() is the folder too: libraries that write temporary files there work (/tmp is not writable).
  return { ...env, NODE_OPTIONS: options, TMPDIR: folder, [CALL_FOLDER_VARIABLE]: folder }
}

/** `path` is `folder` or lies below it. */
function within(path: string, folder: string): boolean {
  return path === folder || path.startsWith(folder === '/' ? '/' : `${folder}/`)
}

/**
 * Paths that cover everything but `hidden` (and what lies below them): for each hidden path,
 * every sibling of every folder on its way down. The permission model only lists what is
 * allowed, so this is how it says "all but". It checks the path asked for and then follows
 * symbolic links, so a link on the way that leads into a hidden path (or to a folder above one)
 * is left out too, and so is every such link one level below the root's folders
 * (/var/run -> /run, /lib -> usr/lib), hidden under its own name as well.
 */
export function everywhereBut(given: string[]): string[] {
  const hidden = [...new Set(given.flatMap((path) => [resolve(path), real(resolve(path))]))]
  const leadsIn = (link: string) => {
    const target = real(link)
    return hidden.some((h) => within(target, h) || within(h, target))
  }
  // Aliases of hidden paths through links near the root: hide them under those names too.
  for (const top of listed('/')) {
    // What lies in a hidden folder is hidden whatever its name: not looked at (/proc's thousands).
    const inHidden = hidden.some((h) => within(`/${top.name}`, h))
    const below = inHidden ? [] : listed(`/${top.name}`).map((entry) => ({ path: `/${top.name}/${entry.name}`, link: entry.link }))
    for (const candidate of [{ path: `/${top.name}`, link: top.link }, ...below]) {
      if (!candidate.link || !leadsIn(candidate.path)) continue
      const path = candidate.path
      const target = real(path)
      for (const h of [...hidden]) if (within(h, target)) hidden.push(path + h.slice(target.length))
      hidden.push(path)
    }
  }
  const allowed = new Set<string>(['/'])
  const join = (folder: string, name: string) => `${folder === '/' ? '' : folder}/${name}`
  for (const path of hidden) {
    const parts = path.split('/').filter((p) => p !== '')
    let folder = '/'
    for (const part of parts) {
      if (allowed.has(folder)) {
        // Allowed whole so far: allow its entries one by one instead, so one can be left out.
        allowed.delete(folder)
        for (const { name, link } of listed(folder)) {
          const entry = join(folder, name)
          if (!link || !leadsIn(entry)) allowed.add(entry)
        }
      } else if (![...allowed].some((p) => p.startsWith(join(folder, '')))) {
        break // hidden already, or never there
      }
      folder = join(folder, part)
    }
    allowed.delete(folder)
  }
  return [...allowed].sort()
}

/**
 * The entries of `folder`, each with whether it is a symbolic link: from the listing itself, not
 * an lstat of each (the front does this at every pack process's start, and /tmp may hold thousands).
 */
function listed(folder: string): Array<{ name: string; link: boolean }> {
  try {
    return readdirSync(folder, { withFileTypes: true }).map((entry) => ({ name: entry.name, link: entry.isSymbolicLink() }))
  } catch {
    return [] // not a folder we can list: nothing below it is allowed
  }
}

/** What a warm pack process may not touch, and whether it may change modes (landlock-exec --keep-modes). */
export type WarmWalls = { hidden: string[]; keepModes: boolean }

/**
 * What warm pack code may not touch although its postures promise no file wall: /proc (where
 * the front's environ, the environment it was started with, is readable by any process of its
 * user) and the token file's whole folder (a mounted secret is often a link to a file beside
 * it: Kubernetes' ..data). (The permission model then also refuses new symlinks.)
 * With strict tools in the pack, no mode change by path either: their folders' root is the
 * service user's, mode 0300 so that no one lists it, and a warm tool set it back to 0700 and
 * read and overwrote running strict calls' files (stop 36). The kernel refuses it (the
 * permission model cannot hide the root without hiding new files in its folder, /tmp).
 * And the devices but a few: a service whose log is a terminal (`docker run -t`, a developer's
 * shell) had a warm tool write lines in the host's format, with the front's pid, straight onto
 * it, past the records pack output becomes (a red-team pass, stop 42); and read what is typed there.
 */
export function warmWalls(tokenFile: string | undefined, strictTools: boolean): WarmWalls {
  const token = tokenFile === undefined || tokenFile === '' ? [] : tokenFolders(tokenFile)
  return { hidden: ['/proc', ...devicesBut(KEPT_DEVICES), ...token], keepModes: strictTools }
}

/**
 * The devices a warm pack process may use. Every other is hidden: the terminals first, and then
 * (a second pass, stop 42) the virtual and serial consoles, their screens (`/dev/vcs*`) and the
 * kernel's log (`/dev/kmsg`), which a service run as root could open.
 */
const KEPT_DEVICES = new Set(['null', 'zero', 'full', 'random', 'urandom', 'shm'])

/**
 * Every entry of /dev but `kept` and its links: everywhereBut hides a link by where it leads too,
 * and one that leads to /dev/null hid /dev/null; a link into a hidden device it leaves out anyway.
 */
function devicesBut(kept: ReadonlySet<string>): string[] {
  return listed('/dev')
    .filter((entry) => !entry.link && !kept.has(entry.name))
    .map((entry) => `/dev/${entry.name}`)
}

/**
 * everywhereBut's answers, by what they hide, made once: a warm pack process starts at every
 * restart, and listing the root's folders each time (/tmp among them) let a tool that filled
 * /tmp with 400,000 files, then had its process end, hold the front's event loop 1.2 s at each
 * start (a red-team pass, stop 42). What pack code may make in those folders after that cannot
 * lead into a hidden path: a link it makes is refused.
 */
const everywhereMade = new Map<string, string[]>()
function everywhereButOnce(hidden: string[]): string[] {
  const key = JSON.stringify(hidden)
  let paths = everywhereMade.get(key)
  if (paths === undefined) {
    paths = everywhereBut(hidden)
    everywhereMade.set(key, paths)
  }
  return paths
}

/**
 * The command that starts a warm group's pack process (`none`, `context-isolated`: issue 16).
 * It runs under the permission model too, for what the runtime walls whatever pack code does:
 * no inspector (a session reaches the process's main thread, which holds every call of the
 * process and its channel to the front: finding 5), and for a group whose every entry declares
 * `network: none`, no child process and, where the runtime gates the network (Node >= 25), no
 * network (findings 13, 14). Files (all but warmHidden's), worker threads (its pool) and addons
 * stay allowed: these postures promise no file wall but the token's and /proc. An addon steps past
 * the permission model altogether. WASI does not: its file calls are not checked by the permission
 * model, and a pure-JS `network: none` tool read the token file through it (a red-team pass, stop 42).
 */
export function packProcessCommand(entry: string, networkNone: boolean, walls: WarmWalls, runtime: Runtime = RUNTIME, wall: Landlock = landlock()): string[] {
  // The front's own flags, but never its permission flags nor an env file (which may hold the token).
  const own = process.execArgv.filter((flag) => !/^--(permission|experimental-permission|allow-|env-file)/.test(flag))
  const everywhere = everywhereButOnce(walls.hidden)
  const node = [
    process.execPath,
    ...own,
    NO_DEBUG_SIGNAL,
    runtime.permissionFlag,
    ...everywhere.map((path) => `--allow-fs-read=${path}`),
    ...everywhere.map((path) => `--allow-fs-write=${path}`),
    '--allow-worker',
    '--allow-addons',
    ...(networkNone ? [] : ['--allow-child-process', ...(runtime.permissionGatesNet ? ['--allow-net'] : [])]),
    '--disable-warning=ExperimentalWarning',
    '--disable-warning=SecurityWarning',
    entry,
    PACK_PROCESS_MARKER,
  ]
  return inLandlock(node, { noNetwork: networkNone, keepModes: walls.keepModes }, wall)
}
