// What a strict call's process may do (issue 16), as Node's permission model and the kernel
// enforce it from outside the code it runs: read the host's own files and the pack, write only
// the call folders (each named at random, the root not listable), start no process or worker,
// load no addon, no node:sqlite (which the permission model does not check), and, where the
// runtime gates the network (Node >= 25), no network at all for a tool that declares none.
// memMB becomes V8's heap limit and the process's data limit (RLIMIT_DATA, through the shell's
// ulimit), which counts SharedArrayBuffers, Buffers and every other allocation.
import { readdirSync, realpathSync } from 'node:fs'
import { dirname, relative, resolve, sep } from 'node:path'
import { fileURLToPath } from 'node:url'
import type { Config } from '../config.js'
import { RUNTIME, type Runtime } from '../runtime.js'

/** Marks a process that runs pack code (tests find them by it, as the memory scan does). */
export const PACK_PROCESS_MARKER = '--kindgi-pack-process'

/** The host's own files: dist/ and node_modules/ live under the package root. */
const PACKAGE_ROOT = resolve(dirname(fileURLToPath(import.meta.url)), '..', '..', '..')

function real(path: string): string {
  try {
    return realpathSync(path)
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

/** A token file pack code could read defeats the point: refuse it under strict. */
export function tokenFileProblem(config: Pick<Config, 'moduleRoot' | 'indexPath'>, tokenFile: string | undefined): string | undefined {
  if (tokenFile === undefined || tokenFile === '') return undefined
  const file = real(resolve(tokenFile))
  const exposed = readableRoots(config).find((root) => inside(file, root))
  if (exposed === undefined) return undefined
  return `KINDGI_PACK_SERVICE_TOKEN_FILE ${tokenFile} lies inside ${exposed}, which pack code may read under the strict posture: mount the secret elsewhere`
}

export type StrictLimits = {
  readRoots: string[]
  /** The root of the call folders: `<root>/call-*` is writable. */
  callRoot: string
  networkNone: boolean
  memMB: number | undefined
  /** The process's own data segment before any pack code (bytes), when known: the data limit adds memMB to it. */
  dataBaseline: number | undefined
}

/** Room above memMB for what V8 keeps outside the old generation (young generation, code). */
const DATA_SLACK_MB = 48

/** The command (program and arguments) that starts a strict call's process running `entry`. */
export function strictCommand(entry: string, limits: StrictLimits, runtime: Runtime = RUNTIME): string[] {
  const calls = `${limits.callRoot}/call-*`
  const node = [
    runtime.permissionFlag,
    ...limits.readRoots.map((p) => `--allow-fs-read=${p}`),
    `--allow-fs-read=${calls}`,
    `--allow-fs-write=${calls}`,
    ...(runtime.permissionGatesNet && !limits.networkNone ? ['--allow-net'] : []),
    '--no-addons',
    '--no-experimental-sqlite',
    '--disable-warning=ExperimentalWarning',
    '--disable-warning=SecurityWarning',
    ...(limits.memMB === undefined ? [] : [`--max-old-space-size=${limits.memMB}`, `--max-semi-space-size=${Math.max(1, Math.min(16, Math.floor(limits.memMB / 8)))}`]),
    entry,
    PACK_PROCESS_MARKER,
  ]
  if (limits.memMB === undefined || limits.dataBaseline === undefined) return [process.execPath, ...node]
  const dataKiB = Math.ceil(limits.dataBaseline / 1024) + (limits.memMB + DATA_SLACK_MB) * 1024
  // The shell sets the limit on itself, then becomes node: the limit holds from node's first instruction.
  return ['/bin/sh', '-c', `ulimit -d ${dataKiB} && exec "$0" "$@"`, process.execPath, ...node]
}

/**
 * Paths that cover everything but `hidden` (and what lies below them): for each hidden path,
 * every sibling of every folder on its way down. The permission model only lists what is
 * allowed, so this is how it says "all but". Missing folders are skipped.
 */
export function everywhereBut(hidden: string[]): string[] {
  const allowed = new Set<string>(['/'])
  const join = (folder: string, name: string) => `${folder === '/' ? '' : folder}/${name}`
  for (const path of hidden) {
    const parts = resolve(path).split('/').filter((p) => p !== '')
    let folder = '/'
    for (const part of parts) {
      if (allowed.has(folder)) {
        // Allowed whole so far: allow its entries one by one instead, so one can be left out.
        allowed.delete(folder)
        let names: string[] = []
        try {
          names = readdirSync(folder)
        } catch {
          // not a folder we can list: nothing below it is allowed
        }
        for (const name of names) allowed.add(join(folder, name))
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
 * What warm pack code may not touch although its postures promise no file wall: /proc (where
 * the front's environ, the environment it was started with, is readable by any process of its
 * user) and the token file. (The permission model then also refuses new symlinks, so none can
 * point there.)
 */
export function warmHidden(tokenFile: string | undefined): string[] {
  return ['/proc', ...(tokenFile === undefined || tokenFile === '' ? [] : [real(resolve(tokenFile))])]
}

/**
 * The command that starts a warm group's pack process (`none`, `context-isolated`: issue 16).
 * It runs under the permission model too, for what the runtime walls whatever pack code does:
 * no inspector (a session reaches the process's main thread, which holds every call of the
 * process and its channel to the front: finding 5), and for a group whose every entry declares
 * `network: none`, no child process and, where the runtime gates the network (Node >= 25), no
 * network (findings 13, 14). Files (all but warmHidden's), worker threads (its pool), addons and WASI
 * stay allowed: these postures promise no file wall. An addon steps past the permission model altogether.
 */
export function packProcessCommand(entry: string, networkNone: boolean, hidden: string[], runtime: Runtime = RUNTIME): string[] {
  const own = process.execArgv.filter((flag) => !/^--(permission|experimental-permission|allow-)/.test(flag))
  const everywhere = everywhereBut(hidden)
  return [
    process.execPath,
    ...own,
    runtime.permissionFlag,
    ...everywhere.map((path) => `--allow-fs-read=${path}`),
    ...everywhere.map((path) => `--allow-fs-write=${path}`),
    '--allow-worker',
    '--allow-addons',
    '--allow-wasi',
    ...(networkNone ? [] : ['--allow-child-process', ...(runtime.permissionGatesNet ? ['--allow-net'] : [])]),
    '--disable-warning=ExperimentalWarning',
    '--disable-warning=SecurityWarning',
    entry,
    PACK_PROCESS_MARKER,
  ]
}
