// --watch: when the index file changes, boot the pack again beside the one serving and swap
// the front to it once every module has loaded. Calls in flight finish on the old pool, which
// closes after them; a broken index is logged as boot-failed and the old pack keeps serving.
import { createHash } from 'node:crypto'
import { readFileSync, statSync } from 'node:fs'
import { bootPack } from './boot.js'
import type { Config } from './config.js'
import type { FrontState } from './http/front-state.js'
import type { Log } from './log.js'
import type { Metrics } from './metrics.js'
import type { Serving } from './serving.js'
import { watchPath } from './watch.js'

export type Reloader = { close(): void }

/** The index as last seen: its hash as /v1/info reports it, plus its mtime (so `touch` reloads). */
function fingerprint(indexPath: string): { hash: string; key: string } {
  try {
    const hash = `sha256:${createHash('sha256').update(readFileSync(indexPath)).digest('hex')}`
    return { hash, key: `${hash}@${statSync(indexPath).mtimeMs}` }
  } catch (err) {
    const code = (err as NodeJS.ErrnoException).code ?? 'unreadable'
    return { hash: code, key: code }
  }
}

/**
 * What every boot of this process shares: the strict call folders' root, the metrics, and the
 * `env-dropped` reporter (a reload writes the line again only when the withheld names change).
 */
export type BootContext = { metrics: Metrics; reportDroppedEnv(dropped: string[]): void }

export function startReloading(state: FrontState, config: Config, log: Log, boot: BootContext): Reloader {
  let closed = false
  let running = false
  let pending = false
  const initial = fingerprint(config.indexPath)
  let lastKey = initial.key

  async function reloadOnce(): Promise<void> {
    const seen = fingerprint(config.indexPath)
    // Both watch sources report one save, and editors write the same bytes again: boot once.
    if (seen.key === lastKey) return
    lastKey = seen.key
    const booted = await bootPack(config, process.env, log, boot.metrics)
    if (booted.kind === 'error') {
      log.error('boot-failed', { problems: booted.problems, reload: true })
      return
    }
    const next = booted.serving
    if (closed || state.draining) {
      await next.pool.close().catch(() => undefined)
      return
    }
    const old = state.serving
    state.serving = next
    const { index, indexHash } = next.pack
    log.info('reloaded', { packId: index.packId, artifactVersion: index.artifactVersion, indexHash })
    boot.reportDroppedEnv(booted.droppedEnv)
    if (next.missingEnv.length > 0) log.warn('missing-env', { check: config.envCheck, names: next.missingEnv })
    if (old !== undefined) void retire(old)
  }

  async function request(): Promise<void> {
    if (closed) return
    // One boot at a time; changes that arrive meanwhile are coalesced into one more pass.
    if (running) {
      pending = true
      return
    }
    running = true
    try {
      do {
        pending = false
        await reloadOnce()
      } while (pending && !closed)
    } catch (err) {
      log.error('internal-error', { error: (err as Error).message, stack: (err as Error).stack })
    } finally {
      running = false
    }
  }

  const watcher = watchPath(config.indexPath, () => void request())
  // A save between the first boot and this watcher would otherwise go unseen.
  if (state.serving !== undefined && initial.hash !== state.serving.pack.indexHash) {
    lastKey = ''
    void request()
  }
  return {
    close() {
      closed = true
      watcher.close()
    },
  }
}

/** Closes an old pool once the calls it admitted have finished (a slot frees with its worker). */
async function retire(old: Serving): Promise<void> {
  await old.pool.dispatcher.idle()
  await old.pool.close().catch(() => undefined)
}
