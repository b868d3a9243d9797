// A pack written into a folder a test made: each tool one module of the code it is given, and
// an index that passes `check`. For attacks and layouts the fixture packs cannot hold (links,
// FIFOs, a package.json above the module root, code that burns as it loads).
import { mkdirSync, writeFileSync } from 'node:fs'
import { join } from 'node:path'

/** A tool of the pack: its module's code (`tools/<id>.js`), and its limits if any. */
export type ScratchTool = { code: string; limits?: { cpuMs?: number; memMB?: number } }

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
