// The process the strict ceiling starts, as the host starts a strict call's process (the same
// flags, strict-flags.ts): import the pack's modules (and, when asked, compile the tool's
// schemas with the host's Ajv), run one call, send the answer. Nothing else.
import { pathToFileURL } from 'node:url'

type Setup = { modules: string[]; input: unknown; schemas?: object[] }

process.once('message', async (setup: Setup) => {
  const mods = await Promise.all(setup.modules.map((m) => import(pathToFileURL(m).href) as Promise<{ default: (input: unknown, ctx: object) => unknown }>))
  if (setup.schemas !== undefined) {
    const { createAjv } = await import('../src/ajv.js')
    const ajv = createAjv({ useDefaults: true })
    for (const schema of setup.schemas) ajv.compile(schema)
  }
  const output = await (mods[0] as { default: (input: unknown, ctx: object) => unknown }).default(setup.input, {})
  process.send!(JSON.stringify({ v: 2, kind: 'result', output }))
})
