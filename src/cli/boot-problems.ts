// Gives each boot problem (the service's own sentences, docs/spec/CONTRACT.md §1) the JSON path of the
// index entry it is about, so `check` can print every problem with its path.
import type { PackIndex } from '../pack-index.js'
import { pointer, type Problem } from './output.js'
import { indexProblem } from './tool-manifest.js'

type Locator = { pattern: RegExp; path(match: RegExpExecArray, index: PackIndex): string | undefined }

const LOCATORS: Locator[] = [
  { pattern: /^Missing module: (.*)$/s, path: (m, index) => moduleField(index, m[1] as string) },
  { pattern: /^Module (.+?) threw while loading: /s, path: (m, index) => moduleField(index, m[1] as string) },
  { pattern: /^Module .+? exports no handler for tool "(.+?)" /s, path: (m, index) => toolPath(index, m[1] as string) },
  { pattern: /^Module .+? exports no check for "(.+?)" /s, path: (m, index) => guardrailPath(index, m[1] as string) },
  { pattern: /^Tool "(.+?)" (input|output) schema does not compile: /s, path: (m, index) => toolPath(index, m[1] as string, m[2]) },
  { pattern: /^Check "(.+?)" config schema does not compile: /s, path: (m, index) => guardrailPath(index, m[1] as string, 'configSchema') },
]

export function locateBootProblem(text: string, index: PackIndex | undefined): Problem {
  const problem = indexProblem(text)
  if (problem.path !== '' || index === undefined) return problem
  for (const locator of LOCATORS) {
    const match = locator.pattern.exec(text)
    const path = match === null ? undefined : locator.path(match, index)
    if (path !== undefined) return { path, message: text }
  }
  return problem
}

/** The first entry that loads code from `modulePath`. */
function moduleField(index: PackIndex, modulePath: string): string | undefined {
  const tool = index.tools.findIndex((t) => t.spec === undefined && t.modulePath === modulePath)
  if (tool !== -1) return pointer('tools', tool, 'modulePath')
  const guardrail = index.guardrails.findIndex((g) => g.checkBuiltIn !== true && g.checkModulePath === modulePath)
  return guardrail === -1 ? undefined : pointer('guardrails', guardrail, 'checkModulePath')
}

function toolPath(index: PackIndex, id: string, field?: string): string | undefined {
  const i = index.tools.findIndex((t) => t.spec === undefined && t.id === id)
  if (i === -1) return undefined
  return field === undefined ? pointer('tools', i) : pointer('tools', i, field)
}

function guardrailPath(index: PackIndex, checkId: string, field?: string): string | undefined {
  const i = index.guardrails.findIndex((g) => g.checkBuiltIn !== true && (g.checkId ?? g.id) === checkId)
  if (i === -1) return undefined
  return field === undefined ? pointer('guardrails', i) : pointer('guardrails', i, field)
}
