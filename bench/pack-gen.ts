// Generates a pack of N tools (a module and an input/output schema each) for the
// start-to-listening measurement. `generatePack` is pure; `writePack` puts it on disk.
import { mkdirSync, writeFileSync } from 'node:fs'
import { dirname, join } from 'node:path'

export type GeneratedPack = { index: Record<string, unknown>; files: Record<string, string> }

export function generatePack(tools: number): GeneratedPack {
  const files: Record<string, string> = {}
  const indexTools: Record<string, unknown>[] = []
  for (let i = 0; i < tools; i++) {
    const id = `gen.tool-${String(i).padStart(3, '0')}`
    const modulePath = `tools/tool-${i}.js`
    files[modulePath] =
      `// Generated tool ${i}.\nexport default function tool${i}(input) {\n  return { id: ${JSON.stringify(id)}, name: input.name, n: input.n * ${i} }\n}\n`
    indexTools.push({
      id,
      version: '1.0.0',
      description: `Generated tool ${i}`,
      modulePath,
      mutating: false,
      input: {
        type: 'object',
        additionalProperties: false,
        required: ['name', 'n'],
        properties: {
          name: { type: 'string', minLength: 1 },
          n: { type: 'integer', minimum: 0 },
          when: { type: 'string', format: 'date-time' },
          tags: { type: 'array', items: { type: 'string' } },
          mode: { enum: ['fast', 'slow'], default: 'fast' },
        },
      },
      output: { type: 'object', required: ['id', 'n'], properties: { id: { type: 'string' }, name: { type: 'string' }, n: { type: 'integer' } } },
    })
  }
  const index = {
    v: 1,
    packId: `generated-${tools}`,
    packVersion: '1.0.0',
    artifactVersion: 'generated.1',
    publishedAt: '2026-01-01T00:00:00.000Z',
    env: { required: [], optional: [] },
    tools: indexTools,
    guardrails: [],
    agents: [],
    flows: [],
  }
  return { index, files }
}

/** Writes the pack under `dir` and answers the path of its index.json. */
export function writePack(dir: string, pack: GeneratedPack): string {
  for (const [path, text] of Object.entries(pack.files)) {
    mkdirSync(dirname(join(dir, path)), { recursive: true })
    writeFileSync(join(dir, path), text)
  }
  const indexPath = join(dir, 'index.json')
  writeFileSync(indexPath, `${JSON.stringify(pack.index, null, 2)}\n`)
  return indexPath
}
