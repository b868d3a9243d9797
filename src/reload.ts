// --watch: when the index file or a file of the pack (pack-files.ts: its modules, what they
// import, the bundles and bundle map) changes, boot the pack again beside the one serving and
// swap the front to it once every module has loaded. Calls in flight finish on the old pool,
// which closes after them; a broken save is logged as boot-failed and the old pack keeps serving.
import { createHash } from 'node:crypto'
import { readFileSync, statSync } from 'node:fs'
import { bootPack } from './boot.js'
import type { Config } from './config.js'
import type { FrontState } from './http/front-state.js'
import type { Log } from './log.js'
import type { Metrics } from './metrics.js'
import type { Cap } from './pool/dispatcher.js'
import { changedFiles, packFileList, stampFiles, stampsKey, type FileStamps } from './pack-files.js'
import type { Serving } from './serving.js'
import { watchPath } from './watch.js'
import { watchTree } from './watch-tree.js'

/** At most this many paths in a `reloaded` line's `changed`: a checkout can touch hundreds. */
const CHANGED_SHOWN = 10

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

/** Files outside the walk's rules that the pack loads from: the bundle map, and modules wherever they are. */
function extraFiles(config: Config, serving: Serving | undefined): string[] {
  const files = serving?.pack.entries.map((e) => e.absPath) ?? []
  if (config.bundleMap !== undefined) files.push(config.bundleMap)
  return files
}

/** The pack's files as they are now (the index aside: its own fingerprint covers it). */
export function packStamps(config: Config, serving: Serving | undefined): FileStamps {
  return stampFiles(packFileList(config.moduleRoot, serving?.pack.entries.map((e) => e.absPath) ?? [], config.bundleMap))
}

/**
 * What every boot of this process shares: the concurrency cap, the metrics, and the
 * `env-dropped` reporter (a reload writes the line again only when the withheld names change).
 * `stampsBeforeBoot`: the pack's files as the first boot found them (packStamps without a
 * serving pack), so a save while it loaded is not missed.
 */
export type BootContext = { cap: Cap; metrics: Metrics; reportDroppedEnv(dropped: string[]): void; stampsBeforeBoot?: FileStamps }

export function startReloading(state: FrontState, config: Config, log: Log, boot: BootContext): Reloader {
  let closed = false
  let running = false
  let pending = false
  const initial = fingerprint(config.indexPath)
  let lastStamps = packStamps(config, state.serving)
  let lastKey = initial.key + stampsKey(lastStamps)

  async function reloadOnce(): Promise<void> {
    const seen = fingerprint(config.indexPath)
    const stamps = packStamps(config, state.serving)
    // Every watch source reports one save, and a burst of saves ends in one look: boot once.
    const key = seen.key + stampsKey(stamps)
    if (key === lastKey) return
    lastKey = key
    const changed = changedFiles(lastStamps, stamps, config.moduleRoot)
    lastStamps = stamps
    const booted = await bootPack(config, process.env, log, boot.metrics, boot.cap)
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
    const shown = changed.length > CHANGED_SHOWN ? [...changed.slice(0, CHANGED_SHOWN), `(and ${changed.length - CHANGED_SHOWN} more)`] : changed
    log.info('reloaded', { packId: index.packId, artifactVersion: index.artifactVersion, indexHash, changed: shown })
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

  const watchers = [
    watchPath(config.indexPath, () => void request()),
    watchTree(
      config.moduleRoot,
      () => extraFiles(config, state.serving),
      () => void request(),
    ),
  ]
  // A save between the first boot and these watchers would otherwise go unseen.
  const before = boot.stampsBeforeBoot
  const savedWhileBooting = before !== undefined && stampsKey(before) !== stampsKey(packStamps(config, undefined))
  if (state.serving !== undefined && (initial.hash !== state.serving.pack.indexHash || savedWhileBooting)) {
    lastKey = ''
    void request()
  }
  return {
    close() {
      closed = true
      for (const watcher of watchers) watcher.close()
    },
  }
}

/** Closes an old pool once the calls it admitted have finished (a slot frees with its worker). */
async function retire(old: Serving): Promise<void> {
  await old.pool.dispatcher.idle()
  await old.pool.close().catch(() => undefined)
}
