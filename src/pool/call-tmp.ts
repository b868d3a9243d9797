// The strict posture's per-call folder (ctx.tmpDir). Its name is chosen when the spare that
// will run the call is started, because the permission model grants that process this one
// folder and nothing else; the folder is made when the call takes the spare and removed once
// the process is gone. Names are random and the root cannot be listed.
import { randomUUID } from 'node:crypto'
import { mkdirSync, rmSync } from 'node:fs'
import { mkdir, rm, rmdir } from 'node:fs/promises'
import { tmpdir } from 'node:os'

export type CallTmp = {
  /** A fresh folder's path under the root, not made yet. */
  reserve(): string
  /** Makes a reserved folder: `{ kind: 'error', why }` if it cannot be made. */
  make(path: string): Promise<{ kind: 'ok' } | { kind: 'error'; why: string }>
  remove(path: string): void
  close(): void
}

export function createCallTmp(): CallTmp {
  const base = `${tmpdir()}/kindgi-pack-host-${process.pid}-${randomUUID().slice(0, 8)}`
  mkdirSync(base, { recursive: true, mode: 0o700 })
  return {
    reserve: () => `${base}/call-${randomUUID()}`,
    async make(path) {
      try {
        await mkdir(path, { mode: 0o700 })
        return { kind: 'ok' }
      } catch (err) {
        return { kind: 'error', why: `its tmpDir could not be made: ${(err as Error).message}` }
      }
    },
    remove(path) {
      // Most calls leave their folder empty: one rmdir, and the recursive walk only for the rest.
      void rmdir(path)
        .catch(() => rm(path, { recursive: true, force: true }))
        .catch(() => undefined)
    },
    close() {
      rmSync(base, { recursive: true, force: true })
    },
  }
}
