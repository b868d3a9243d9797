// The kernel's wall around every process that runs pack code (issue 16, finding 3). The front,
// the spawner and every pack process run as one user, and the kernel lets a process signal
// any other process of its user: the signal guard in a pack process is JavaScript, so pack
// code that gets past it, or a child process of warm pack code, could kill the front. Each
// pack process is therefore started through landlock-exec (workers/native/), which puts it in
// a Landlock domain of its own first: the kernel refuses it signals to any process outside
// the domain and their abstract unix sockets, and writes into /proc; a seccomp filter lets it
// renice, limit or pin no process but itself; a `network: none` process gets no socket at all;
// and a strict call's process writes nowhere but its call folder (V8's own file writes, which
// Node's permission model never sees, included) and reads nowhere but where it is told (a link
// its pack ships, which the permission model follows, included). Needs Linux 6.12 (Landlock ABI 6); where it
// cannot be had, processes start as before and the `listening` line says why.
import { spawnSync } from 'node:child_process'
import { fileURLToPath } from 'node:url'

/** Built by `npm run build` (workers/native/build.mjs) beside the bundled workers. */
export const LANDLOCK_EXEC = fileURLToPath(new URL('../../workers/native/landlock-exec', import.meta.url))

/** Landlock's scoping of signals and abstract unix sockets came with ABI 6. */
const MIN_ABI = 6

export type Landlock = { kind: 'on'; helper: string; abi: number } | { kind: 'off'; why: string }

/** Whether pack processes can be walled here: runs the helper's probe. */
export function probeLandlock(helper: string = LANDLOCK_EXEC): Landlock {
  if (process.platform !== 'linux') return { kind: 'off', why: `Landlock is Linux's, this is ${process.platform}` }
  const probe = spawnSync(helper, ['--probe'], { encoding: 'utf8', timeout: 5_000 })
  if (probe.error !== undefined) {
    const code = (probe.error as NodeJS.ErrnoException).code ?? probe.error.message
    return { kind: 'off', why: `${helper} did not run (${code}): build the host with a C compiler on the path (npm run build)` }
  }
  const abi = Number.parseInt(probe.stdout, 10) || 0
  if (probe.status !== 0 && abi >= MIN_ABI) {
    const step = probe.stderr.trim().replace(/^kindgi landlock-exec: /, '')
    return { kind: 'off', why: `the wall could not be put up here (${step}): a seccomp profile that refuses Landlock or seccomp filters?` }
  }
  if (probe.status !== 0) {
    const kernel = abi === 0 ? 'this kernel has no Landlock (or a seccomp profile refuses it)' : `this kernel's Landlock is ABI ${abi}`
    return { kind: 'off', why: `${kernel}; walling signals needs ABI ${MIN_ABI} (Linux 6.12 or later)` }
  }
  return { kind: 'on', helper, abi }
}

let probed: Landlock | undefined

/** This machine's answer, probed once. */
export function landlock(): Landlock {
  probed ??= probeLandlock()
  return probed
}

/** Where landlock-exec --call-folder reads the folder (not on its command line; it removes it before Node starts). */
export const CALL_FOLDER_VARIABLE = 'KINDGI_CALL_FOLDER'

/** What a process's wall holds beyond the one every pack process gets. */
export type WallOptions = {
  /** A `network: none` process: no socket at all. */
  noNetwork: boolean
  /** A strict call's process: writes only beneath the folder CALL_FOLDER_VARIABLE names (callFolderEnv). */
  callFolder?: boolean
  /** With callFolder: reads only beneath these folders (and its call folder). */
  reads?: readonly string[]
  /** A warm process of a pack with strict tools: no mode or ACL changed by path (the strict calls' root stays unlistable). */
  keepModes?: boolean
}

/** `command` started inside a Landlock domain of its own, where the kernel allows it. */
export function inLandlock(command: string[], options: WallOptions, wall: Landlock = landlock()): string[] {
  if (wall.kind === 'off') return command
  return [
    wall.helper,
    ...(options.noNetwork ? ['--no-network'] : []),
    ...(options.keepModes === true ? ['--keep-modes'] : []),
    ...(options.callFolder === true ? ['--call-folder', ...(options.reads ?? []).flatMap((path) => ['--read', path])] : []),
    '--',
    ...command,
  ]
}
