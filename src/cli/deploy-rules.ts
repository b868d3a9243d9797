// What a deploy refuses that the service itself does not check at boot: duplicate ids, tool
// manifests the runtime would refuse (versions, limits, postures, reserved names), reserved
// env names, and a guardrail naming a built-in check without saying so. Reads data only.
import type { PackIndex } from '../pack-index.js'
import { createAjv } from '../ajv.js'
import { pointer, type Problem } from './output.js'
import { schemaProblems } from './schema-problems.js'
import { buildManifest, manifestProblems } from './tool-manifest.js'
import { networkSchema, positiveInteger, RESERVED_ENV_PREFIX, reservedReason, sandboxSchema, VERSION_PATTERN } from './tool-manifest-schema.js'

export type DeployRuleOptions = {
  /** Check ids the runtime runs itself, beyond those the index marks checkBuiltIn. */
  builtInChecks: readonly string[]
}

/** Any valid UUID: `check` judges the manifests without a project. */
const SOME_PROJECT = '00000000-0000-4000-8000-000000000000'

export function deployProblems(index: PackIndex, options: DeployRuleOptions): Problem[] {
  return [
    ...duplicateIds(index),
    ...index.tools.flatMap((tool, i) => manifestProblems(buildManifest(tool, index, { projectId: SOME_PROJECT }), pointer('tools', i))),
    ...guardrailPostures(index),
    ...envNames(index),
    ...builtInChecks(index, options.builtInChecks),
    ...blockVersions(index),
  ]
}

type Entry = { id?: unknown; version?: unknown; [field: string]: unknown }

// Several versions of one tool, agent or flow may be indexed; a guardrail or block is one.
const KEYED_BY_VERSION = ['tools', 'agents', 'flows']
const KEYED_BY_ID = ['guardrails', 'blocks']

function duplicateIds(index: PackIndex): Problem[] {
  const problems: Problem[] = []
  for (const list of [...KEYED_BY_VERSION, ...KEYED_BY_ID]) {
    const withVersion = KEYED_BY_VERSION.includes(list)
    const seen = new Set<string>()
    entries(index, list).forEach((entry, i) => {
      const key = JSON.stringify(withVersion ? [entry.id, entry.version ?? null] : entry.id)
      if (seen.has(key)) {
        const what = withVersion && entry.version !== undefined ? `id "${String(entry.id)}" at version ${String(entry.version)}` : `id "${String(entry.id)}"`
        problems.push({ path: pointer(list, i), message: `${what} is listed twice` })
      }
      seen.add(key)
    })
  }
  return problems
}

function entries(index: PackIndex, list: string): Entry[] {
  const items = index[list]
  return Array.isArray(items) ? (items as Entry[]) : []
}

const guardrailSchema = {
  type: 'object',
  properties: { sandbox: sandboxSchema, limits: { type: 'object', properties: { memMB: positiveInteger, cpuMs: positiveInteger } }, network: networkSchema },
}
const validateGuardrail = createAjv({ useDefaults: false }).compile(guardrailSchema)

function guardrailPostures(index: PackIndex): Problem[] {
  return index.guardrails.flatMap((guardrail, i) =>
    validateGuardrail(guardrail) ? [] : schemaProblems(guardrailSchema, validateGuardrail.errors, guardrail, pointer('guardrails', i)),
  )
}

function envNames(index: PackIndex): Problem[] {
  const problems: Problem[] = []
  const required = new Set(index.env?.required ?? [])
  for (const list of ['required', 'optional'] as const) {
    ;(index.env?.[list] ?? []).forEach((name, i) => {
      const path = pointer('env', list, i)
      if (name.startsWith(RESERVED_ENV_PREFIX)) {
        problems.push({ path, message: `"${name}" ${reservedReason(RESERVED_ENV_PREFIX)}` })
      }
      if (list === 'optional' && required.has(name)) problems.push({ path, message: `"${name}" is in env.required too; a name is one or the other` })
    })
  }
  return problems
}

function builtInChecks(index: PackIndex, named: readonly string[]): Problem[] {
  const checkId = (g: PackIndex['guardrails'][number]) => g.checkId ?? g.id
  const builtIn = new Set([...named, ...index.guardrails.filter((g) => g.checkBuiltIn === true).map(checkId)])
  const problems: Problem[] = []
  index.guardrails.forEach((guardrail, i) => {
    if (guardrail.checkBuiltIn === true || !builtIn.has(checkId(guardrail))) return
    problems.push({
      path: pointer('guardrails', i, 'checkBuiltIn'),
      message: `is missing: "${checkId(guardrail)}" is a built-in check, so without checkBuiltIn: true ${guardrail.checkModulePath} is loaded as its check`,
    })
  })
  return problems
}

const version = new RegExp(VERSION_PATTERN)

function blockVersions(index: PackIndex): Problem[] {
  return entries(index, 'blocks').flatMap((block, i) =>
    typeof block.version === 'string' && !version.test(block.version)
      ? [{ path: pointer('blocks', i, 'version'), message: `${JSON.stringify(block.version)} is not major.minor.patch` }]
      : [],
  )
}
