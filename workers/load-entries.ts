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
      const e = err as Error
      problems.push(`Module ${entry.modulePath} threw while loading: ${e?.name ?? 'Error'}: ${e?.message ?? String(err)}`)
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
