// The strict posture's per-call folder (ctx.tmpDir): made before the call, removed once its
// process is gone. Names are random so one call cannot guess another's; under the
// permission model only `<root>/call-*` is writable and the root itself cannot be listed.
import { randomUUID } from 'node:crypto'
import { mkdirSync, rmSync } from 'node:fs'
import { mkdir, rm } from 'node:fs/promises'
import { tmpdir } from 'node:os'

export type CallTmp = {
  /** The folder the call folders are made in (`<root>/call-*`). */
  root: string
  make(): Promise<string>
  remove(path: string): void
  close(): void
}

export function createCallTmp(): CallTmp {
  const base = `${tmpdir()}/kindgi-pack-host-${process.pid}-${randomUUID().slice(0, 8)}`
  mkdirSync(base, { recursive: true, mode: 0o700 })
  return {
    root: base,
    async make() {
      const path = `${base}/call-${randomUUID()}`
      await mkdir(path, { mode: 0o700 })
      return path
    },
    remove(path) {
      void rm(path, { recursive: true, force: true }).catch(() => undefined)
    },
    close() {
      rmSync(base, { recursive: true, force: true })
    },
  }
}
