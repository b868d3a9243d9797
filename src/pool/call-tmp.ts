// The strict posture's per-call folders (ctx.tmpDir): where they live and what each is called.
// A name is chosen when the spare that will run the call is started, because the permission
// model grants that process this one folder and nothing else; the spawner makes the folder
// before the process starts and removes it once the process is gone (spawner-process.ts).
// Names are random and the root cannot be listed, not even by the service's own user (mode
// 0300: enter and make, never read): a warm pack process, which runs as that user and may read
// the rest of /tmp, listed the root and read and overwrote a running strict call's files (stop
// 27). Only a process with CAP_DAC_OVERRIDE (root) lists it still; the image runs without.
// The root is this module's alone: made here, made again here should a /tmp cleaner take it
// (the spawner makes only the call's own folder in it, so nothing makes it after it went), and
// removed with the pool that made it, or with the process should it exit without closing that
// pool (it could not listen, a signal came while the pack loaded): each such start left one
// in /tmp before.
import { randomUUID } from 'node:crypto'
import { chmodSync, existsSync, mkdirSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { removeFolder } from './remove-folder.js'

export type CallTmp = {
  /** The folder every call's folder is made in. */
  root: string
  /** A fresh folder's path under the root, not made yet (the root is, unless closed). */
  reserve(): string
  /** Removes the root and whatever is left in it. */
  close(): Promise<void>
}

export function createCallTmp(): CallTmp {
  const base = `${tmpdir()}/kindgi-pack-host-${process.pid}-${randomUUID().slice(0, 8)}`
  const make = () => {
    mkdirSync(base, { recursive: true, mode: 0o700 })
    chmodSync(base, 0o300)
  }
  make()
  let closed = false
  const atExit = () => removeNow(base)
  process.once('exit', atExit)
  return {
    root: base,
    reserve() {
      if (!closed && !existsSync(base)) make()
      return `${base}/call-${randomUUID()}`
    },
    async close() {
      closed = true
      // What is left, whatever modes its calls left behind; a root that will not go stays, said nowhere: the service is ending.
      await removeFolder(base)
      process.off('exit', atExit)
    },
  }
}

/** At exit only synchronous work runs: the root back to its owner's permissions, then Node's removal. */
function removeNow(root: string): void {
  // Again while it is there: Node's removal gives up without a word when the spawner removes a
  // call's folder in it meanwhile (remove-folder.ts).
  for (let attempt = 0; attempt < 3 && existsSync(root); attempt++) {
    try {
      chmodSync(root, 0o700)
      rmSync(root, { recursive: true, force: true })
    } catch {
      // The process is ending, and what will not go (a call's folder its pack code locked) stays.
    }
  }
}
