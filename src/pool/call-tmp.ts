// The strict posture's per-call folders (ctx.tmpDir): where they live and what each is called.
// A name is chosen when the spare that will run the call is started, because the permission
// model grants that process this one folder and nothing else; the spawner makes the folder
// before the process starts and removes it once the process is gone (spawner-process.ts).
// Names are random and the root cannot be listed, not even by the service's own user (mode
// 0300: enter and make, never read): a warm pack process, which runs as that user and may read
// the rest of /tmp, listed the root and read and overwrote a running strict call's files (stop
// 27). Only a process with CAP_DAC_OVERRIDE (root) lists it still; the image runs without.
// The root is this module's alone: made here, made again here, under a new name, should a /tmp
// cleaner take it or something put another folder in its place (a warm tool renamed it away and
// made its own, and read every call folder made in it after: stop 36; the spawner makes a call's
// folder only in the root it was told of, checked by identity), and
// removed with the pool that made it, or with the process should it exit without closing that
// pool (it could not listen, a signal came while the pack loaded), or by the spawner should the
// process be killed outright (spawner-process.ts): each such start or death left one in /tmp before.
import { randomUUID } from 'node:crypto'
import { chmodSync, lstatSync, mkdirSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { dirname } from 'node:path'
import { removeFolder } from './remove-folder.js'
import { removeTree } from './remove-tree.js'

/** A call's folder, not made yet, and the identity of the root it must be made in (rootIdentity). */
export type Reserved = { folder: string; root: string }

export type CallTmp = {
  /** The folder every call's folder is made in now. */
  readonly root: string
  /** A fresh folder's path under the root, not made yet (the root is, unless closed). */
  reserve(): Reserved
  /** Removes the root and whatever is left in it. */
  close(): Promise<void>
}

/** The root could not be made: why, and what gives the service one. */
export type CallTmpResult = { kind: 'ok'; tmp: CallTmp } | { kind: 'error'; problem: string }

/**
 * What a folder is, whatever it is called, and that it is still unlistable: its device, inode,
 * birth time and mode (the spawner checks a call folder's parent by it). The birth time because
 * ext4 and xfs give a folder made after one was removed the same inode number at once; the mode
 * because a root something made listable is no root to make calls' folders in (stop 37).
 */
export function rootIdentity(path: string): string | undefined {
  try {
    const stat = lstatSync(path, { bigint: true })
    return stat.isDirectory() ? `${stat.dev}:${stat.ino}:${stat.birthtimeNs}:${stat.mode}` : undefined
  } catch {
    return undefined
  }
}

/** Made only for a pack with a strict tool: no other call has a folder, and a service may run with no writable /tmp. */
export function createCallTmp(): CallTmpResult {
  const make = (): { path: string; identity: string } => {
    const path = `${tmpdir()}/kindgi-pack-host-${process.pid}-${randomUUID().slice(0, 8)}`
    mkdirSync(dirname(path), { recursive: true })
    // Made at its mode, never wider: a folder made listable and narrowed after could be opened in
    // between and listed through that descriptor for good (a review, stop 37). The chmod only
    // makes up what a umask took away.
    mkdirSync(path, { mode: 0o300 })
    chmodSync(path, 0o300)
    // Never empty: a folder of a name no one can guess (the root cannot be listed), so that no
    // process of the service's user can remove the root (rmdir wants it empty) and make its own
    // in its place, which ext4 gives the same inode number at once (stop 37).
    mkdirSync(`${path}/.held-${randomUUID()}`, { mode: 0o700 })
    return { path, identity: rootIdentity(path) ?? '' }
  }
  let current: { path: string; identity: string }
  try {
    current = make()
  } catch (err) {
    return {
      kind: 'error',
      problem:
        `Cannot make the folder for strict calls' ctx.tmpDir in ${tmpdir()}: ${(err as Error).message}. ` +
        'Strict tools need a writable temporary folder: set TMPDIR to one, or mount a writable /tmp (an emptyDir volume under a read-only root filesystem)',
    }
  }
  const made = [current.path]
  let closed = false
  // At exit only synchronous work runs: the thread's removal, here; what will not go (a call's
  // folder its pack code locked) stays, said nowhere: the process is ending.
  const atExit = () => {
    for (const path of made) removeTree(path)
  }
  process.once('exit', atExit)
  const tmp: CallTmp = {
    get root() {
      return current.path
    },
    reserve() {
      // Gone, or another folder in its place (a warm tool renamed it away and made its own, whose
      // every later call folder it could read: stop 36): a new root, under a new name.
      if (!closed && rootIdentity(current.path) !== current.identity) {
        try {
          current = make()
          made.push(current.path)
        } catch {
          // The spawner's make of the call's folder then fails, and says why as the call's not-started answer.
        }
      }
      return { folder: `${current.path}/call-${randomUUID()}`, root: current.identity }
    },
    async close() {
      closed = true
      // What is left, whatever modes its calls left behind; a root that will not go stays, said
      // nowhere: the service is ending.
      for (const path of made) await removeFolder(path)
      process.off('exit', atExit)
    },
  }
  return { kind: 'ok', tmp }
}
