// Starts every worker group a pack needs, proves each one loaded its modules (a probe call
// in a real worker: readiness rests on that, not on pool construction), and hands calls to
// the dispatcher. Pack code never loads in this process: warm groups run in pack processes
// of their own (pack-process-group.ts), strict calls in processes of their own (strict-group.ts).
import { randomUUID } from 'node:crypto'
import type { Config } from '../config.js'
import type { RunnableEntry } from '../protocol/runnable-entry.js'
import { type CallTmp, createCallTmp } from './call-tmp.js'
import { createThreadBudget } from './thread-budget.js'
import { createToolFiles } from './tool-files.js'
import { type Cap, createDispatcher, type Dispatcher } from './dispatcher.js'
import type { WorkerGroup } from './group.js'
import type { ReplaceReason } from '../protocol/call-answers.js'
import { createPackProcessGroup } from './pack-process-group.js'
import { planGroups } from './plan.js'
import { readableRoots, warmWalls } from './strict-flags.js'
import { createStrictGroup } from './strict-group.js'

export type Pool = {
  dispatcher: Dispatcher
  workerCount(): number
  /** Live workers by posture, for the workers gauge. */
  workersByPosture(): Record<RunnableEntry['posture'], number>
  close(): Promise<void>
}

export type PoolResult = { kind: 'ok'; pool: Pool } | { kind: 'error'; problems: string[] }

export type PoolOptions = {
  entries: RunnableEntry[]
  env: Record<string, string>
  config: Pick<Config, 'maxConcurrency' | 'workerThreads' | 'moduleRoot' | 'indexPath' | 'tokenFile'>
  onReplaced(reason: ReplaceReason, id: string | undefined): void
  /** How long module loading may take before boot gives up. */
  bootTimeoutMs?: number
  /** The process's concurrency cap (a reload's pool shares it with the one it replaces). */
  cap: Cap
  /** With --watch: the pack's files as this boot read them, for strict groups to load (pack-files.ts readSources). */
  sources?: Readonly<Record<string, string>>
}

export async function startPool(options: PoolOptions): Promise<PoolResult> {
  const abortChannel = `kindgi-pack-host-abort-${randomUUID()}`
  const toolFiles = createToolFiles()
  const groups: WorkerGroup[] = []
  const budget = createThreadBudget(options.config.workerThreads, () => groups.flatMap((g) => g.holders()))
  const plans = planGroups(options.entries)
  const madeTmp = plans.some((plan) => plan.posture === 'strict') ? createCallTmp() : undefined
  if (madeTmp?.kind === 'error') return { kind: 'error', problems: [madeTmp.problem] }
  const callTmp = madeTmp?.tmp
  const readRoots = readableRoots(options.config)
  const walls = warmWalls(options.config.tokenFile, callTmp !== undefined)
  const byEntry = new Map<string, WorkerGroup>()
  const postureOf = new Map<WorkerGroup, RunnableEntry['posture']>()
  for (const plan of plans) {
    const common = {
      key: plan.key,
      entries: plan.entries,
      env: options.env,
      memMB: plan.memMB,
      maxThreads: options.config.maxConcurrency,
      abortChannel,
      onReplaced: options.onReplaced,
      onFileRequest: toolFiles.handle,
      budget,
    }
    const group =
      plan.posture === 'strict'
        ? createStrictGroup({ ...common, readRoots, callTmp: made(callTmp), sources: options.sources })
        : createPackProcessGroup({ ...common, minThreads: plan.posture === 'none' ? 2 : 1, workerThreads: options.config.workerThreads, walls })
    groups.push(group)
    postureOf.set(group, plan.posture)
    for (const entry of plan.entries) byEntry.set(entry.key, group)
  }

  const problems = await probeAll(groups, options.bootTimeoutMs ?? 30_000)
  const close = async () => {
    budget.close()
    await Promise.all(groups.map((g) => g.close()))
    await callTmp?.close()
  }
  if (problems.length > 0) {
    await close()
    return { kind: 'error', problems }
  }
  const dispatcher = createDispatcher((entry) => byEntry.get(entry.key) as WorkerGroup, options.cap, toolFiles)
  const workersByPosture = () => {
    const counts = { none: 0, 'context-isolated': 0, strict: 0 }
    for (const [group, posture] of postureOf) counts[posture] += group.workerCount()
    return counts
  }
  return {
    kind: 'ok',
    pool: { dispatcher, workerCount: () => groups.reduce((n, g) => n + g.workerCount(), 0), workersByPosture, close },
  }
}

/** The call root, made above whenever a plan is strict: its absence here is a bug. */
function made(callTmp: CallTmp | undefined): CallTmp {
  if (callTmp === undefined) throw new Error('a strict group without a call root')
  return callTmp
}

async function probeAll(groups: WorkerGroup[], timeoutMs: number): Promise<string[]> {
  const results = await Promise.all(
    groups.map(async (group) => {
      let timer: NodeJS.Timeout | undefined
      const timeout = new Promise<string[]>((resolve) => {
        timer = setTimeout(
          () => resolve([`Modules of ${group.entries.map((e) => e.modulePath).join(', ')} did not finish loading within ${timeoutMs} ms`]),
          timeoutMs,
        )
      })
      try {
        return await Promise.race([group.probe(), timeout])
      } catch (err) {
        const paths = [...new Set(group.entries.map((e) => e.modulePath))].join(', ')
        return [`A worker loading ${paths} died while loading: ${(err as Error).message}`]
      } finally {
        clearTimeout(timer)
      }
    }),
  )
  return [...new Set(results.flat())]
}
