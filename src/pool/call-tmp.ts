// The strict posture's per-call folders (ctx.tmpDir): where they live and what each is called.
// A name is chosen when the spare that will run the call is started, because the permission
// model grants that process this one folder and nothing else; the spawner makes the folder
// before the process starts and removes it once the process is gone (spawner-process.ts).
// Names are random and the root cannot be listed, not even by the service's own user (mode
// 0300: enter and make, never read): a warm pack process, which runs as that user and may read
// the rest of /tmp, listed the root and read and overwrote a running strict call's files (stop
// 27). Only a process with CAP_DAC_OVERRIDE (root) lists it still; the image runs without.
import { randomUUID } from 'node:crypto'
import { chmodSync, mkdirSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { removeFolder } from './remove-folder.js'

export type CallTmp = {
  /** The folder every call's folder is made in. */
  root: string
  /** A fresh folder's path under the root, not made yet. */
  reserve(): string
  /** Removes the root and whatever is left in it. */
  close(): Promise<void>
}

export function createCallTmp(): CallTmp {
  const base = `${tmpdir()}/kindgi-pack-host-${process.pid}-${randomUUID().slice(0, 8)}`
  mkdirSync(base, { recursive: true, mode: 0o700 })
  chmodSync(base, 0o300)
  return {
    root: base,
    reserve: () => `${base}/call-${randomUUID()}`,
    async close() {
      // What is left, whatever modes its calls left behind; a root that will not go stays, said nowhere: the service is ending.
      await removeFolder(base)
    },
  }
}
