// Turns Ajv's errors into problems a pack author can act on: the JSON path of the value,
// the value itself and why it is refused (a schema node's `x-reason` when it has one).
import type { ErrorObject } from 'ajv'
import { pointer, type Problem } from './output.js'

/** `prefix` is the path of `data` in the file the author edits (e.g. "/tools/3"). */
export function schemaProblems(schema: object, errors: ErrorObject[] | null | undefined, data: unknown, prefix: string): Problem[] {
  const problems: Problem[] = []
  const seen = new Set<string>()
  for (const e of errors ?? []) {
    if (e.keyword === 'propertyNames') continue // its inner error names the property
    // A property that is missing, or whose name is refused, is the path itself.
    const propertyName = (e as ErrorObject & { propertyName?: string }).propertyName
    const missing = e.keyword === 'required' ? (e.params as { missingProperty: string }).missingProperty : undefined
    const name = propertyName ?? missing
    const path = e.instancePath + (name === undefined ? '' : pointer(name))
    const value = propertyName ?? valueAt(data, e.instancePath)
    const problem = { path: prefix + path, message: describe(e, value, nodeAt(schema, e.schemaPath)) }
    const key = `${problem.path}\n${problem.message}`
    if (seen.has(key)) continue
    seen.add(key)
    problems.push(problem)
  }
  return problems
}

function describe(e: ErrorObject, value: unknown, node: Record<string, unknown> | undefined): string {
  const shown = typeof value === 'object' && value !== null ? undefined : JSON.stringify(value)
  const reason = node?.['x-reason']
  if (typeof reason === 'string' && shown !== undefined) return `${shown} ${reason}`
  if (e.keyword === 'enum') {
    const allowed = (e.params as { allowedValues: unknown[] }).allowedValues.map((v) => JSON.stringify(v)).join(', ')
    return `${shown ?? 'the value'} is not one of ${allowed}`
  }
  if (e.keyword === 'required') return 'is required'
  return shown === undefined ? (e.message ?? 'is invalid') : `${shown} ${e.message ?? 'is invalid'}`
}

/** The schema node holding the failing keyword (schemaPath minus its last segment). */
function nodeAt(schema: object, schemaPath: string): Record<string, unknown> | undefined {
  const parts = schemaPath.replace(/^#\/?/, '').split('/').slice(0, -1)
  return walk(schema, parts) as Record<string, unknown> | undefined
}

function valueAt(data: unknown, instancePath: string): unknown {
  return walk(data, instancePath === '' ? [] : instancePath.slice(1).split('/'))
}

function walk(root: unknown, encodedParts: string[]): unknown {
  let node = root
  for (const raw of encodedParts) {
    if (typeof node !== 'object' || node === null) return undefined
    node = (node as Record<string, unknown>)[raw.replaceAll('~1', '/').replaceAll('~0', '~')]
  }
  return node
}
