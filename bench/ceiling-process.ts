// The process the strict ceiling starts, as the host starts a strict call's process: the same
// command and flags (strict-flags.ts), bundled as CommonJS as the host's is, and the same
// channel (workers/fd-channel.ts: its input read blocking, its answer written on fd 3). It
// imports the pack's modules (and, when asked, compiles the tool's schemas with the host's
// Ajv), runs one call, answers and ends itself at once, as the host's does (guards.ts
// endThisProcess). Nothing else: what the host does more is its own cost.
import { pathToFileURL } from 'node:url'
import { openFdChannel } from '../workers/fd-channel.js'

/** `ajv`: the host's src/ajv.js, by URL, when `schemas` are to be compiled (imported only then). */
type Setup = { modules: string[]; input: unknown; schemas?: object[]; ajv?: string }
type Handler = (input: unknown, ctx: object) => unknown

const channel = openFdChannel(
  () => undefined,
  () => process.exit(1),
)

async function main(): Promise<void> {
  const setup = (await channel.next()) as Setup
  const mods = await Promise.all(setup.modules.map((m) => import(pathToFileURL(m).href) as Promise<{ default: Handler }>))
  if (setup.schemas !== undefined && setup.ajv !== undefined) {
    const { createAjv } = (await import(setup.ajv)) as typeof import('../src/ajv.js')
    const ajv = createAjv({ useDefaults: true })
    for (const schema of setup.schemas) ajv.compile(schema)
  }
  const output = await (mods[0] as { default: Handler }).default(setup.input, {})
  channel.send({ v: 2, kind: 'result', output })
  process.kill(process.pid, 'SIGKILL')
}

void main()
