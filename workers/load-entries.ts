// Imports a group's pack modules and instantiates their validators (compiled at boot in the
// front), once, when a worker starts. Every failure becomes a boot problem string.
import { pathToFileURL } from 'node:url'
import type { RunnableEntry } from '../src/protocol/runnable-entry.js'
import { findCheck, findHandler, type CheckFn, type HandlerFn } from './module-shapes.js'
import { instantiate, type ValidateFunction } from './validators.js'

export type LoadedEntry = {
  entry: RunnableEntry
  handler?: HandlerFn
  check?: CheckFn
  validateInput?: ValidateFunction
  validateOutput?: ValidateFunction
  validateConfig?: ValidateFunction
}

export type Loaded = { entries: Map<string, LoadedEntry>; problems: string[] }

function validator(code: string | undefined, what: string, problems: string[]): ValidateFunction | undefined {
  if (code === undefined) return undefined
  try {
    return instantiate(code)
  } catch (err) {
    problems.push(`${what} validator does not load: ${(err as Error).message}`)
    return undefined
  }
}

/**
 * Why a module did not load. Node's permission model says only "Access to this API has been
 * restricted. Use --allow-fs-read to manage permissions", a flag no pack author sets: the path
 * it refused is said instead, with what to do (a pack in a monorepo whose packages are hoisted
 * to a node_modules above it met exactly that, stop 40).
 */
function loadError(err: unknown): string {
  const e = err as { name?: string; message?: string; code?: unknown; permission?: unknown; resource?: unknown } | null
  if (e?.code === 'ERR_ACCESS_DENIED' && typeof e.resource === 'string') {
    if (e.permission === 'FileSystemRead') {
      return `its sandbox may not read ${e.resource}, outside the pack's module root: put the packages it imports in a node_modules inside the pack (not one a monorepo hoisted above it), or bundle them into the pack`
    }
    if (e.permission === 'FileSystemWrite') return `its sandbox may not write ${e.resource}: pack code writes only in ctx.tmpDir`
  }
  return `${e?.name ?? 'Error'}: ${e?.message ?? String(err)}`
}

export async function loadEntries(entries: RunnableEntry[]): Promise<Loaded> {
  const problems: string[] = []
  const loaded = new Map<string, LoadedEntry>()
  const modules = new Map<string, Promise<Record<string, unknown>>>()
  for (const entry of entries) {
    const name = entry.target === 'tool' ? `Tool "${entry.id}"` : `Check "${entry.id}"`
    let mod: Record<string, unknown>
    try {
      let pending = modules.get(entry.absPath)
      if (pending === undefined) {
        pending = import(pathToFileURL(entry.absPath).href) as Promise<Record<string, unknown>>
        modules.set(entry.absPath, pending)
      }
      mod = await pending
    } catch (err) {
      problems.push(`Module ${entry.modulePath} threw while loading: ${loadError(err)}`)
      continue
    }
    const item: LoadedEntry = { entry }
    if (entry.target === 'tool') {
      item.handler = findHandler(mod)
      if (item.handler === undefined) {
        problems.push(`Module ${entry.modulePath} exports no handler for tool "${entry.id}" (a default function, or handler/run)`)
      }
      item.validateInput = validator(entry.validators?.input, `${name} input`, problems)
      item.validateOutput = validator(entry.validators?.output, `${name} output`, problems)
    } else {
      item.check = findCheck(mod)
      if (item.check === undefined) {
        problems.push(`Module ${entry.modulePath} exports no check for "${entry.id}" (evaluate, default or check)`)
      }
      item.validateConfig = validator(entry.validators?.config, `${name} config`, problems)
    }
    loaded.set(entry.key, item)
  }
  return { entries: loaded, problems }
}
