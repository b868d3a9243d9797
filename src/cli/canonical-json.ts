// The index's canonical bytes (pack-index.md "Determinism"): lists sorted by id, keys sorted
// at every level, two-space indent, a trailing newline, integral numbers without a fraction.
// `check` compares a file against them and `check --fix` writes them.
import { pointer, type Problem } from './output.js'

/** The index lists pack-index.md sorts by id. */
export const ID_LISTS = ['tools', 'guardrails', 'agents', 'flows', 'blocks'] as const
/** The string lists it sorts as they are. */
const ENV_LISTS = ['required', 'optional'] as const

type Json = null | boolean | number | string | Json[] | { [key: string]: Json }

// Code-unit order, what `<` on strings gives; never localeCompare.
const byCodeUnit = (a: string, b: string): number => (a < b ? -1 : a > b ? 1 : 0)

function isObject(value: unknown): value is { [key: string]: Json } {
  return typeof value === 'object' && value !== null && !Array.isArray(value)
}

function idOf(item: unknown): string {
  return isObject(item) && typeof item.id === 'string' ? item.id : ''
}

/**
 * JSON with sorted keys and a two-space indent. Written by hand because JavaScript objects
 * enumerate integer-like keys ("2", "10") first, whatever order they were built in.
 */
export function stringifySorted(value: unknown, indent = ''): string {
  if (Array.isArray(value)) {
    if (value.length === 0) return '[]'
    const inner = `${indent}  `
    return `[\n${value.map((v) => inner + stringifySorted(v, inner)).join(',\n')}\n${indent}]`
  }
  if (isObject(value)) {
    const keys = Object.keys(value).sort(byCodeUnit)
    if (keys.length === 0) return '{}'
    const inner = `${indent}  `
    return `{\n${keys.map((k) => `${inner}${JSON.stringify(k)}: ${stringifySorted(value[k], inner)}`).join(',\n')}\n${indent}}`
  }
  return JSON.stringify(value) ?? 'null'
}

/** The index with its lists in canonical order; ties keep their order (a stable sort). */
function sortLists(index: unknown): unknown {
  if (!isObject(index)) return index
  const sorted: { [key: string]: Json } = { ...index }
  for (const list of ID_LISTS) {
    const items = index[list]
    if (Array.isArray(items)) sorted[list] = [...items].sort((a, b) => byCodeUnit(idOf(a), idOf(b)))
  }
  const env = index.env
  if (isObject(env)) {
    const sortedEnv = { ...env }
    for (const list of ENV_LISTS) {
      const names = env[list]
      if (Array.isArray(names)) sortedEnv[list] = [...names].sort((a, b) => byCodeUnit(String(a), String(b)))
    }
    sorted.env = sortedEnv
  }
  return sorted
}

/** The canonical text of a parsed index. */
export function canonicalIndex(index: unknown): string {
  return `${stringifySorted(sortLists(index))}\n`
}

const MAX_KEY_PROBLEMS = 5

/**
 * Where `text` (the file as read) departs from the canonical form of `index` (the same file
 * parsed): each unsorted list and each object with unsorted keys by its path, else the first
 * line whose layout differs. Empty when the file is canonical.
 */
export function canonicalProblems(text: string, index: unknown): Problem[] {
  if (text === canonicalIndex(index)) return []
  const fix = '(check --fix rewrites it)'
  const problems: Problem[] = []
  if (isObject(index)) {
    for (const list of ID_LISTS) {
      const items = index[list]
      if (!Array.isArray(items)) continue
      const at = items.findIndex((item, i) => i > 0 && byCodeUnit(idOf(items[i - 1]), idOf(item)) > 0)
      if (at !== -1) {
        problems.push({ path: pointer(list, at), message: `not sorted by id: "${idOf(items[at])}" comes after "${idOf(items[at - 1])}" ${fix}` })
      }
    }
    const env = index.env
    for (const list of ENV_LISTS) {
      const names = isObject(env) ? env[list] : undefined
      if (!Array.isArray(names)) continue
      const at = names.findIndex((name, i) => i > 0 && byCodeUnit(String(names[i - 1]), String(name)) > 0)
      if (at !== -1)
        problems.push({ path: pointer('env', list, at), message: `not sorted: "${String(names[at])}" comes after "${String(names[at - 1])}" ${fix}` })
    }
  }
  const unsorted = unsortedKeys(index, [])
  for (const path of unsorted.slice(0, MAX_KEY_PROBLEMS)) problems.push({ path, message: `keys are not sorted ${fix}` })
  if (unsorted.length > MAX_KEY_PROBLEMS) {
    problems.push({ path: '', message: `keys are not sorted in ${unsorted.length - MAX_KEY_PROBLEMS} more objects ${fix}` })
  }
  if (problems.length === 0) {
    const line = firstDifferentLine(text, canonicalIndex(index))
    problems.push({
      path: '',
      message: `line ${line} is not in canonical layout (two-space indent, a trailing newline, integral numbers without a fraction) ${fix}`,
    })
  }
  return problems
}

/** Paths of the objects whose keys, as the file lists them, are not in code-unit order. */
function unsortedKeys(value: unknown, at: Array<string | number>): string[] {
  if (Array.isArray(value)) return value.flatMap((v, i) => unsortedKeys(v, [...at, i]))
  if (!isObject(value)) return []
  const keys = Object.keys(value)
  // Integer-like keys hide the file's order (JavaScript lists them first): leave them to the layout check.
  const knowable = !keys.some((k) => /^(0|[1-9]\d*)$/.test(k))
  const own = knowable && keys.some((k, i) => i > 0 && byCodeUnit(keys[i - 1] as string, k) > 0) ? [pointer(...at)] : []
  return [...own, ...keys.flatMap((k) => unsortedKeys(value[k], [...at, k]))]
}

function firstDifferentLine(a: string, b: string): number {
  const left = a.split('\n')
  const right = b.split('\n')
  let i = 0
  while (i < left.length && i < right.length && left[i] === right[i]) i++
  return i + 1
}
