// Under KINDGI_PACK_SANDBOX=strict the service runs under Node's permission model. The
// process the operator started cannot restrict itself, so it re-executes the service with
// the permission flags and a clean environment, hands it the token through a pipe (never
// the environment), forwards SIGTERM/SIGINT, and exits with the served process's code.
import { spawn } from 'node:child_process'
import { mkdtempSync, realpathSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { dirname, relative, resolve, sep } from 'node:path'
import { fileURLToPath } from 'node:url'
import type { Config } from './config.js'
import { RUNTIME, type Runtime } from './runtime.js'

/** Set in the served process's environment; read and removed at its start. */
export const TOKEN_FD_VAR = 'KINDGI_PACK_HOST_TOKEN_FD'
export const TMP_ROOT_VAR = 'KINDGI_PACK_HOST_TMP_ROOT'

const MAIN = fileURLToPath(new URL('./main.js', import.meta.url))
/** The host's own files: dist/ and node_modules/ live under the package root. */
const PACKAGE_ROOT = resolve(dirname(MAIN), '..', '..')

export function runsUnderPermissionModel(): boolean {
  return (process as unknown as { permission?: unknown }).permission !== undefined
}

function inside(path: string, folder: string): boolean {
  const rel = relative(folder, path)
  return rel === '' || (!rel.startsWith('..') && !rel.startsWith(sep) && rel !== '..')
}

function real(path: string): string {
  try {
    return realpathSync(path)
  } catch {
    return path
  }
}

/** What pack code may read under strict: the host, the pack, the index and its call folders. */
export function readableRoots(config: Pick<Config, 'moduleRoot' | 'indexPath'>): string[] {
  return [...new Set([PACKAGE_ROOT, real(PACKAGE_ROOT), config.moduleRoot, real(config.moduleRoot), config.indexPath, real(config.indexPath)])]
}

/** A token file pack code could read defeats the point: refuse it under strict. */
export function tokenFileProblem(config: Pick<Config, 'moduleRoot' | 'indexPath'>, tokenFile: string | undefined): string | undefined {
  if (tokenFile === undefined || tokenFile === '') return undefined
  const file = real(resolve(tokenFile))
  const exposed = readableRoots(config).find((root) => inside(file, root))
  if (exposed === undefined) return undefined
  return `KINDGI_PACK_SERVICE_TOKEN_FILE ${tokenFile} lies inside ${exposed}, which pack code may read under KINDGI_PACK_SANDBOX=strict: mount the secret elsewhere`
}

export function permissionFlags(config: Pick<Config, 'moduleRoot' | 'indexPath'>, tmpRoot: string, runtime: Runtime = RUNTIME): string[] {
  const calls = `${tmpRoot}/call-*`
  return [
    runtime.permissionFlag,
    '--disable-warning=ExperimentalWarning',
    '--disable-warning=SecurityWarning',
    ...readableRoots(config).map((p) => `--allow-fs-read=${p}`),
    `--allow-fs-read=${calls}`,
    `--allow-fs-write=${calls}`,
    // Piscina and the strict spares are worker threads; no child processes, no addons.
    '--allow-worker',
    // Where the permission model gates the network it gates the whole process: the front
    // listens in this same process, so the network stays open here.
    ...(runtime.permissionGatesNet ? ['--allow-net'] : []),
  ]
}

/** Starts the served process and mirrors its life; resolves with the exit code to use. */
export function relaunch(config: Config, argv: string[], env: NodeJS.ProcessEnv): Promise<number> {
  const tmpRoot = mkdtempSync(`${tmpdir()}/kindgi-pack-host-`)
  const childEnv: Record<string, string> = {}
  for (const [k, v] of Object.entries(env)) {
    if (v !== undefined && k !== 'KINDGI_PACK_SERVICE_TOKEN' && k !== 'KINDGI_PACK_SERVICE_TOKEN_FILE') childEnv[k] = v
  }
  childEnv[TOKEN_FD_VAR] = '3'
  childEnv[TMP_ROOT_VAR] = tmpRoot
  const child = spawn(process.execPath, [...permissionFlags(config, tmpRoot), ...process.execArgv, MAIN, ...argv], {
    env: childEnv,
    stdio: ['inherit', 'inherit', 'inherit', 'pipe'],
  })
  const pipe = child.stdio[3] as NodeJS.WritableStream
  // A served process that dies before reading the token closes the pipe: its exit says why.
  pipe.on('error', () => undefined)
  pipe.end(config.token)
  const forward = (signal: NodeJS.Signals) => () => child.kill(signal)
  const onTerm = forward('SIGTERM')
  const onInt = forward('SIGINT')
  process.on('SIGTERM', onTerm)
  process.on('SIGINT', onInt)
  return new Promise((resolveExit) => {
    child.once('exit', (code, signal) => {
      process.off('SIGTERM', onTerm)
      process.off('SIGINT', onInt)
      rmSync(tmpRoot, { recursive: true, force: true })
      resolveExit(code ?? (signal === 'SIGKILL' ? 137 : 1))
    })
  })
}
