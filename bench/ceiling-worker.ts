// The worker the strict ceiling starts: import the pack's modules (and, when asked, compile
// the tool's schemas with the host's Ajv), run one call, post the answer. Nothing else.
import { parentPort, workerData } from 'node:worker_threads'
import { pathToFileURL } from 'node:url'

type Setup = { modules: string[]; input: unknown; schemas?: object[] }
const setup = workerData as Setup

const mods = await Promise.all(setup.modules.map((m) => import(pathToFileURL(m).href) as Promise<{ default: (input: unknown, ctx: object) => unknown }>))
if (setup.schemas !== undefined) {
  const { createAjv } = await import('../src/ajv.js')
  const ajv = createAjv({ useDefaults: true })
  for (const schema of setup.schemas) ajv.compile(schema)
}
const output = await (mods[0] as { default: (input: unknown, ctx: object) => unknown }).default(setup.input, {})
parentPort!.postMessage(JSON.stringify({ v: 2, kind: 'result', output }))
