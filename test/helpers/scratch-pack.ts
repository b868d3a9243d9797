// A pack written into a folder a test made: each tool one module of the code it is given, and
// an index that passes `check`. For attacks and layouts the fixture packs cannot hold (links,
// FIFOs, a package.json above the module root, code that burns as it loads).
import { mkdirSync, writeFileSync } from 'node:fs'
import { join } from 'node:path'

/** A tool of the pack: its module's code (`tools/<id>.js`), and its limits if any. */
export type ScratchTool = { code: string; limits?: { cpuMs?: number; memMB?: number } }

/** A tool as the walls pack's echo is (what `stillServes` calls): its input and tenant back. */
export const ECHO_TOOL: ScratchTool = { code: 'export default (input, ctx) => ({ input, tenantId: ctx.tenantId })\n' }

/** Writes `tools` and their index into `root` (made if missing); returns the index's path. */
export function writeScratchPack(root: string, packId: string, tools: Record<string, ScratchTool>): string {
  mkdirSync(join(root, 'tools'), { recursive: true })
  const entries = Object.entries(tools).map(([id, tool]) => {
    writeFileSync(join(root, 'tools', `${id}.js`), tool.code)
    return {
      id,
      description: `The ${id} tool.`,
      version: '1.0.0',
      modulePath: `tools/${id}.js`,
      input: { type: 'object' },
      output: { type: 'object' },
      ...(tool.limits && { limits: tool.limits }),
    }
  })
  const index = {
    v: 1,
    packId,
    packVersion: '1.0.0',
    artifactVersion: '1',
    publishedAt: '2026-12-01T10:00:00.000Z',
    agents: [],
    flows: [],
    guardrails: [],
    tools: entries,
  }
  writeFileSync(join(root, 'index.json'), JSON.stringify(index))
  return join(root, 'index.json')
}

/**
 * A pack at `<project>/packs/p` whose one tool (`uses`) imports a package a monorepo hoisted to
 * `<project>/node_modules`, above the pack's module root: it loads under `none`, not under
 * `strict`. Returns the index's path.
 */
export function writeHoistedPack(project: string): string {
  const dep = join(project, 'node_modules', 'hoisted-dep')
  mkdirSync(dep, { recursive: true })
  writeFileSync(join(dep, 'package.json'), JSON.stringify({ name: 'hoisted-dep', type: 'module', main: 'index.js' }))
  writeFileSync(join(dep, 'index.js'), 'export const answer = 42\n')
  return writeScratchPack(join(project, 'packs', 'p'), 'hoisted', {
    uses: { code: "import { answer } from 'hoisted-dep'\nexport default () => ({ answer })\n" },
  })
}
