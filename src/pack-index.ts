// Reads the pack's index.json and checks it (docs/spec/CONTRACT.md §1 boot order, pack-index.md), then
// turns it into the entries the pool runs. Never imports pack code: modules are only
// checked for existence here and loaded in workers.
import { createHash } from 'node:crypto'
import { existsSync, readFileSync } from 'node:fs'
import { resolve } from 'node:path'
import { POSTURES, type Posture } from './protocol/runnable-entry.js'
import { createAjv } from './ajv.js'
import { bundleOf, readBundleMap, type BundleMap } from './bundle-map.js'
import { packIndexSchema } from './pack-index-schema.js'
import { nestedPast } from './protocol/json-values.js'
import type { RunnableEntry } from './protocol/runnable-entry.js'

export type IndexTool = {
  id: string
  version?: string
  modulePath: string
  input: object
  output: object
  spec?: { kind?: string }
  sandbox?: string
  limits?: { memMB?: unknown; cpuMs?: unknown }
  network?: { kind?: unknown }
  pauses?: boolean
  storesFiles?: boolean
  readsFiles?: boolean
  [field: string]: unknown
}

export type IndexGuardrail = {
  id: string
  checkId?: string
  checkModulePath: string
  checkBuiltIn?: true
  configSchema?: object
  sandbox?: string
  limits?: { memMB?: unknown; cpuMs?: unknown }
  network?: { kind?: unknown }
  [field: string]: unknown
}

export type PackIndex = {
  v: 1
  packId: string
  packVersion: string
  artifactVersion: string
  publishedAt: string
  tools: IndexTool[]
  guardrails: IndexGuardrail[]
  env?: { required: string[]; optional: string[] }
  [field: string]: unknown
}

export type LoadedPack = {
  index: PackIndex
  indexHash: string
  /** Tools and checks this service runs, by key ("tool:<id>@<version>", "check:<id>"). */
  entries: RunnableEntry[]
  /** Tool ids the runtime runs itself (declarative spec), for a clear tool-not-in-pack. */
  declarativeTools: Map<string, string>
}

/**
 * `ok` may still carry problems (a missing module, a bad limit): boot goes on to load the
 * rest in workers so the operator sees every problem in one line, then fails.
 */
export type IndexResult = { kind: 'ok'; pack: LoadedPack; problems: string[] } | { kind: 'error'; problems: string[] }

const ajv = createAjv({ useDefaults: false })
const validateIndex = ajv.compile(packIndexSchema)

/** How deep a pack index may nest (nestedPast). */
export const MAX_INDEX_DEPTH = 256

const RANK: Record<Posture, number> = { none: 0, 'context-isolated': 1, strict: 2 }

export function toolKey(id: string, version: string | undefined): string {
  return `tool:${id}@${version ?? ''}`
}

export function checkKey(id: string): string {
  return `check:${id}`
}

/**
 * Reads, hashes and checks the index; problems are collected, not thrown. With a bundle map
 * (`--bundle-map FILE`), a module it covers resolves to its bundle.
 */
export function loadPackIndex(indexPath: string, moduleRoot: string, leastPosture: Posture, bundleMapFile?: string): IndexResult {
  let bundles: BundleMap | undefined
  if (bundleMapFile !== undefined) {
    const read = readBundleMap(bundleMapFile)
    if (read.kind === 'error') return { kind: 'error', problems: [read.problem] }
    bundles = read.map
  }
  let bytes: Buffer
  let parsed: unknown
  try {
    bytes = readFileSync(indexPath)
    parsed = JSON.parse(bytes.toString('utf8'))
  } catch (err) {
    return { kind: 'error', problems: [`Cannot read the pack index: ${(err as Error).message}`] }
  }
  // Entries cross to pack processes and to the spawner as JSON, which V8 encodes and decodes
  // recursively: a schema's `examples` nested some thousands deep ended the spawner as it
  // decoded a probe (a red-team pass, stop 42). No schema needs a tenth of the bound.
  const deep = nestedPast(parsed, MAX_INDEX_DEPTH)
  if (deep !== undefined) {
    const where = deep.length > 160 ? `${deep.slice(0, 160)}…` : deep
    return {
      kind: 'error',
      problems: [`Index ${where}: nested more than ${MAX_INDEX_DEPTH} levels deep; no pack index needs that (flatten the schema, or move the data out of it)`],
    }
  }
  const v = (parsed as { v?: unknown } | null)?.v
  if (typeof parsed !== 'object' || parsed === null || v !== 1) {
    return { kind: 'error', problems: [`Index envelope v${JSON.stringify(v) ?? ''} is not v1`] }
  }
  if (!validateIndex(parsed)) {
    const problems = (validateIndex.errors ?? []).map((e) => `Index ${e.instancePath === '' ? '(root)' : e.instancePath}: ${e.message ?? 'is invalid'}`)
    return { kind: 'error', problems }
  }
  const index = parsed as unknown as PackIndex
  const problems: string[] = []
  const entries: RunnableEntry[] = []
  const declarativeTools = new Map<string, string>()
  const seen = new Set<string>()

  index.tools.forEach((tool, i) => {
    const where = `/tools/${i}`
    if (tool.spec !== undefined) {
      declarativeTools.set(tool.id, String(tool.spec.kind ?? 'declarative'))
      return
    }
    const key = toolKey(tool.id, tool.version)
    if (seen.has(key)) problems.push(`Index ${where}: tool "${tool.id}" version ${tool.version ?? '(none)'} is listed twice`)
    seen.add(key)
    const common = commonFields(tool, where, leastPosture, problems)
    const absPath = moduleFile(moduleRoot, tool.modulePath, bundles, problems)
    if (absPath === undefined) return
    entries.push({
      key,
      target: 'tool',
      id: tool.id,
      version: tool.version,
      modulePath: tool.modulePath,
      absPath,
      input: tool.input,
      output: tool.output,
      ...common,
      pauses: tool.pauses === true,
      storesFiles: tool.storesFiles === true,
      readsFiles: tool.readsFiles === true,
    })
  })

  index.guardrails.forEach((guardrail, i) => {
    if (guardrail.checkBuiltIn === true) return
    const id = guardrail.checkId ?? guardrail.id
    const key = checkKey(id)
    if (seen.has(key)) return // several guardrails may share one check
    seen.add(key)
    const common = commonFields(guardrail, `/guardrails/${i}`, leastPosture, problems)
    const absPath = moduleFile(moduleRoot, guardrail.checkModulePath, bundles, problems)
    if (absPath === undefined) return
    entries.push({
      key,
      target: 'check',
      id,
      modulePath: guardrail.checkModulePath,
      absPath,
      configSchema: guardrail.configSchema,
      ...common,
      pauses: false,
      storesFiles: false,
      readsFiles: false,
    })
  })

  const indexHash = `sha256:${createHash('sha256').update(bytes).digest('hex')}`
  return { kind: 'ok', pack: { index, indexHash, entries, declarativeTools }, problems }
}

/** Where a module path's code is (its bundle, if the map covers it), or undefined if missing. */
function moduleFile(moduleRoot: string, modulePath: string, bundles: BundleMap | undefined, problems: string[]): string | undefined {
  const bundle = bundleOf(bundles, modulePath)
  const file = resolve(moduleRoot, bundle ?? modulePath)
  if (existsSync(file)) return file
  problems.push(bundle === undefined ? `Missing module: ${modulePath}` : `Missing module: ${bundle} (the bundle --bundle-map names for ${modulePath})`)
  return undefined
}

type Common = Pick<RunnableEntry, 'posture' | 'memMB' | 'cpuMs' | 'networkNone'>

function commonFields(
  entry: { sandbox?: string; limits?: { memMB?: unknown; cpuMs?: unknown }; network?: { kind?: unknown } },
  where: string,
  leastPosture: Posture,
  problems: string[],
): Common {
  let posture: Posture = 'none'
  if (entry.sandbox !== undefined) {
    if ((POSTURES as readonly string[]).includes(entry.sandbox)) posture = entry.sandbox as Posture
    else problems.push(`Index ${where}/sandbox: "${entry.sandbox}" is not none, context-isolated or strict`)
  }
  if (RANK[leastPosture] > RANK[posture]) posture = leastPosture
  const memMB = positiveInteger(entry.limits?.memMB, `${where}/limits/memMB`, problems)
  const cpuMs = positiveInteger(entry.limits?.cpuMs, `${where}/limits/cpuMs`, problems)
  const kind = entry.network?.kind
  if (entry.network !== undefined && kind !== 'none' && kind !== 'unrestricted') {
    problems.push(`Index ${where}/network/kind: ${JSON.stringify(kind)} is not "none" or "unrestricted"`)
  }
  return { posture, memMB, cpuMs, networkNone: kind === 'none' }
}

function positiveInteger(value: unknown, where: string, problems: string[]): number | undefined {
  if (value === undefined) return undefined
  if (typeof value === 'number' && Number.isInteger(value) && value >= 1) return value
  problems.push(`Index ${where}: ${JSON.stringify(value)} is not an integer >= 1`)
  return undefined
}
