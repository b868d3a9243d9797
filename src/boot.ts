// Loads a pack into something servable: read and check the index, start the worker pool and
// prove every module loaded. Used at start and by --watch; problems are returned, not thrown.
import type { Config } from './config.js'
import type { Log } from './log.js'
import { NO_METRICS, type Metrics } from './metrics.js'
import { packFileList, readSources } from './pack-files.js'
import { loadPackIndex } from './pack-index.js'
import { type Cap, createCap } from './pool/dispatcher.js'
import { startPool } from './pool/pool.js'
import { readableRoots, tokenFileProblem } from './pool/strict-flags.js'
import { missingEnv, workerEnv } from './pool/worker-env.js'
import { createServing, type Serving } from './serving.js'
import { compileValidators } from './validator-code.js'

/** `droppedEnv`: the names the env filter withheld from pack code, sorted (`env-dropped`). */
export type BootResult = { kind: 'ok'; serving: Serving; droppedEnv: string[] } | { kind: 'error'; problems: string[] }

/** `cap`: the process's concurrency cap; a reload passes the one its first boot had. */
export async function bootPack(
  config: Config,
  env: NodeJS.ProcessEnv,
  log: Log,
  metrics: Metrics = NO_METRICS,
  cap: Cap = createCap(config.maxConcurrency),
): Promise<BootResult> {
  const loaded = loadPackIndex(config.indexPath, config.moduleRoot, config.sandbox, config.bundleMap)
  if (loaded.kind === 'error') return loaded
  const postures = { strict: loaded.pack.entries.some((e) => e.posture === 'strict'), warm: loaded.pack.entries.some((e) => e.posture !== 'strict') }
  const exposed = tokenFileProblem(config, config.tokenFile, postures)
  if (exposed !== undefined) return { kind: 'error', problems: [exposed] }
  // Schemas compile here, once; workers get their validators as code (validator-code.ts).
  const compiled = compileValidators(loaded.pack.entries)
  const pack = { ...loaded.pack, entries: compiled.entries }
  const problems = [...loaded.problems, ...compiled.problems]
  const filtered = workerEnv(env, pack.index, config.envFilter)
  // Strict calls import their module anew each call: with --watch they get this boot's text,
  // so the old pack keeps its code until a reload swaps it (warm processes hold theirs anyway).
  const strict = config.watch && pack.entries.some((e) => e.posture === 'strict')
  const files = strict
    ? packFileList(
        config.moduleRoot,
        pack.entries.map((e) => e.absPath),
        config.bundleMap,
      )
    : []
  const sources = strict ? readSources(files, readableRoots(config)) : undefined
  const started = await startPool({
    entries: pack.entries,
    env: filtered.env,
    config,
    sources,
    cap,
    onReplaced: (reason, id) => {
      log.warn('worker-replaced', id === undefined ? { reason } : { reason, id })
      metrics.workerReplaced(reason)
    },
  })
  if (started.kind === 'error') return { kind: 'error', problems: [...problems, ...started.problems] }
  if (problems.length > 0) {
    await started.pool.close()
    return { kind: 'error', problems }
  }
  return { kind: 'ok', serving: createServing(pack, started.pool, missingEnv(env, pack.index)), droppedEnv: filtered.dropped }
}
