// What the front serves at one moment: a loaded pack, its running pool, and the lookups an
// invoke needs. Built once per pack load; --watch swaps one for another.
import type { LoadedPack } from './pack-index.js'
import type { Pool } from './pool/pool.js'
import { errorMessage } from './protocol/messages.js'
import type { ErrorMessage, RequestMessage, Target } from './protocol/wire.js'
import type { RunnableEntry } from './protocol/runnable-entry.js'

export type Serving = {
  pack: LoadedPack
  pool: Pool
  /** Tool entries by tool id (one per indexed version). */
  tools: Map<string, RunnableEntry[]>
  checks: Map<string, RunnableEntry>
  missingEnv: string[]
}

export function createServing(pack: LoadedPack, pool: Pool, missingEnv: string[]): Serving {
  const tools = new Map<string, RunnableEntry[]>()
  const checks = new Map<string, RunnableEntry>()
  for (const entry of pack.entries) {
    if (entry.target === 'check') {
      checks.set(entry.id, entry)
      continue
    }
    const versions = tools.get(entry.id) ?? []
    versions.push(entry)
    tools.set(entry.id, versions)
  }
  return { pack, pool, tools, checks, missingEnv }
}

export function infoBody(serving: Serving): Record<string, unknown> {
  const { index, indexHash } = serving.pack
  return {
    protocol: 2,
    packId: index.packId,
    packVersion: index.packVersion,
    artifactVersion: index.artifactVersion,
    indexHash,
    tools: index.tools.map((t) => (t.version === undefined ? { id: t.id } : { id: t.id, version: t.version })),
    checks: [...serving.checks.keys()],
    missingEnv: serving.missingEnv,
  }
}

/** Whether the served pack indexes this tool or check: only such ids become metric labels. */
export function servesId(serving: Serving, about: Target): boolean {
  if (about.target === 'check') return serving.checks.has(about.id)
  return serving.tools.has(about.id) || serving.pack.declarativeTools.has(about.id)
}

export type Resolved = { kind: 'ok'; entry: RunnableEntry } | { kind: 'error'; error: ErrorMessage }

/** Finds the entry a request names (docs/spec/CONTRACT.md §5: tools by id and version, checks by id). */
export function resolveEntry(serving: Serving, message: RequestMessage): Resolved {
  if (message.kind === 'check-invoke') {
    const id = message.check.id
    const entry = serving.checks.get(id)
    if (entry !== undefined) return { kind: 'ok', entry }
    const about = { target: 'check', id } as const
    return { kind: 'error', error: errorMessage('check-not-in-pack', `Check "${id}" is not in pack ${serving.pack.index.packId}`, about) }
  }
  const { id, version } = message.tool
  const about = { target: 'tool', id } as const
  const versions = serving.tools.get(id)
  if (versions === undefined) {
    const spec = serving.pack.declarativeTools.get(id)
    const why =
      spec !== undefined
        ? `Tool "${id}" is declarative (spec kind ${spec}): the runtime runs it itself, not the pack service`
        : `Tool "${id}" is not in pack ${serving.pack.index.packId}`
    return { kind: 'error', error: errorMessage('tool-not-in-pack', why, about) }
  }
  if (version !== undefined) {
    const entry = versions.find((e) => e.version === version)
    if (entry !== undefined) return { kind: 'ok', entry }
    const have = versions.map((e) => e.version ?? '(unversioned)').join(', ')
    return { kind: 'error', error: errorMessage('tool-version-mismatch', `Tool "${id}" is indexed at version ${have}, not ${version}`, about) }
  }
  if (versions.length === 1) return { kind: 'ok', entry: versions[0] as RunnableEntry }
  const have = versions.map((e) => e.version ?? '(unversioned)').join(', ')
  return {
    kind: 'error',
    error: errorMessage('tool-version-mismatch', `Tool "${id}" has several indexed versions (${have}): name one in tool.version`, about),
  }
}
