// Builds the POST /v1/tools body (a ToolManifest) for each tool of an index and checks it
// against the spec's rules, so `manifests` and `register` never print or send one the
// runtime would refuse, and `check` reports the same refusals at the index's own paths.
import { dirname } from 'node:path'
import { createAjv } from '../ajv.js'
import { loadPackIndex, type IndexTool, type PackIndex } from '../pack-index.js'
import type { Problem } from './output.js'
import { schemaProblems } from './schema-problems.js'
import { toolManifestSchema } from './tool-manifest-schema.js'

export type ToolManifest = {
  id: string
  projectId: string
  /** Required by the spec, optional in an index: validation says so when it is missing. */
  description?: string
  version?: string
  input: object
  output: object
  codeArtifactRef?: { kind: 'oci'; imageRef: string; modulePath: string; artifactVersion: string }
  [field: string]: unknown
}

export type ManifestOptions = { projectId: string; image?: string; bundleMap?: string }

/** The index fields a ToolManifest carries as they are, when the index has them. */
const OPTIONAL_FIELDS = [
  'effects',
  'needs',
  'needsSpec',
  'sandbox',
  'limits',
  'network',
  'mutating',
  'needsApprovalWhenUnattended',
  'pauses',
  'storesFiles',
  'readsFiles',
  'resultIsOutsideData',
  'spec',
] as const

/** Capabilities only a tool with a handler has (register-tool-manifest.md). */
const HANDLER_ONLY = ['pauses', 'storesFiles', 'readsFiles'] as const

export function buildManifest(tool: IndexTool, index: PackIndex, options: ManifestOptions): ToolManifest {
  const manifest: ToolManifest = {
    id: tool.id,
    projectId: options.projectId,
    ...(tool.description === undefined ? {} : { description: tool.description as string }),
    ...(tool.version === undefined ? {} : { version: tool.version }),
    input: tool.input,
    output: tool.output,
  }
  for (const field of OPTIONAL_FIELDS) if (tool[field] !== undefined) manifest[field] = tool[field]
  // A declarative tool is run by the runtime itself: no code of it lives in the image.
  if (options.image !== undefined && tool.spec === undefined) {
    manifest.codeArtifactRef = { kind: 'oci', imageRef: options.image, modulePath: tool.modulePath, artifactVersion: index.artifactVersion }
  }
  return manifest
}

const validate = createAjv({ useDefaults: false }).compile(toolManifestSchema)

/** Every rule of the spec a manifest breaks, at `prefix` + its path in the manifest. */
export function manifestProblems(manifest: ToolManifest, prefix: string): Problem[] {
  const problems = validate(manifest) ? [] : schemaProblems(toolManifestSchema, validate.errors, manifest, prefix)
  if (manifest.spec !== undefined) {
    for (const field of HANDLER_ONLY) {
      if (manifest[field] === true)
        problems.push({ path: `${prefix}/${field}`, message: `a tool with a declarative spec cannot have ${field}: true (only a tool with a handler can)` })
    }
  }
  return problems
}

export type ManifestsResult = { kind: 'ok'; index: PackIndex; manifests: ToolManifest[] } | { kind: 'error'; problems: Problem[] }

/** Reads the index (shape-checked as at boot) and returns its manifests, or every problem. */
export function manifestsFromIndex(indexPath: string, options: ManifestOptions): ManifestsResult {
  // Module files do not matter to a manifest: only the index's own problems stop it.
  const loaded = loadPackIndex(indexPath, dirname(indexPath), 'none', options.bundleMap)
  if (loaded.kind === 'error') return { kind: 'error', problems: loaded.problems.map(indexProblem) }
  const index = loaded.pack.index
  const manifests = index.tools.map((tool) => buildManifest(tool, index, options))
  const problems = manifests.flatMap((manifest, i) => manifestProblems(manifest, `/tools/${i}`))
  return problems.length > 0 ? { kind: 'error', problems } : { kind: 'ok', index, manifests }
}

/** A loader problem ("Index /tools/0: …" or a sentence) as a problem with a path. */
export function indexProblem(text: string): Problem {
  const match = /^Index (\/\S*|\(root\)): (.*)$/s.exec(text)
  if (match === null) return { path: '', message: text }
  return { path: match[1] === '(root)' ? '' : (match[1] as string), message: match[2] as string }
}
