// The strict posture's per-call folders (ctx.tmpDir): where they live and what each is called.
// A name is chosen when the spare that will run the call is started, because the permission
// model grants that process this one folder and nothing else; the spawner makes the folder
// before the process starts and removes it once the process is gone (spawner-process.ts).
// Names are random and the root cannot be listed.
import { randomUUID } from 'node:crypto'
import { mkdirSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'

export type CallTmp = {
  /** A fresh folder's path under the root, not made yet. */
  reserve(): string
  /** Removes the root and whatever is left in it. */
  close(): void
}

export function createCallTmp(): CallTmp {
  const base = `${tmpdir()}/kindgi-pack-host-${process.pid}-${randomUUID().slice(0, 8)}`
  mkdirSync(base, { recursive: true, mode: 0o700 })
  return {
    reserve: () => `${base}/call-${randomUUID()}`,
    close() {
      rmSync(base, { recursive: true, force: true })
    },
  }
}
