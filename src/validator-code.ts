// Compiles every pack schema once, at boot, in the front, into Ajv standalone code that
// workers instantiate without importing Ajv: a worker then starts in milliseconds instead of
// spending tens of ms on the compiler (that is what makes strict calls and big packs start
// fast: bench/PROFILE.md, design figures), and holds no compiler in memory. Schemas are data; no pack code runs here.
import { createRequire } from 'node:module'
import type { Ajv2020 } from 'ajv/dist/2020.js'
import { checkSchema, createAjv } from './ajv.js'
import type { RunnableEntry, ValidatorCode } from './protocol/runnable-entry.js'

type StandaloneCode = (ajv: Ajv2020, validate: unknown) => string
// ajv/dist/standalone is CommonJS with a default export the ESM interop does not see as callable.
const standaloneCode = (createRequire(import.meta.url)('ajv/dist/standalone') as { default: StandaloneCode }).default

type Compiler = { ajv: Ajv2020; useDefaults: boolean }

function compileOne(compiler: Compiler, schema: object): string {
  checkSchema(schema)
  try {
    return standaloneCode(compiler.ajv, compiler.ajv.compile(schema))
  } catch (err) {
    // Two schemas may share an $id: give this one a compiler of its own.
    if (!/already exists/.test((err as Error).message)) throw err
    const own = createAjv({ useDefaults: compiler.useDefaults, source: true })
    return standaloneCode(own, own.compile(schema))
  }
}

export type CompiledValidators = { entries: RunnableEntry[]; problems: string[] }

/** Returns the entries with their validators' code, and a problem for each schema that does not compile. */
export function compileValidators(entries: RunnableEntry[]): CompiledValidators {
  const withDefaults: Compiler = { ajv: createAjv({ useDefaults: true, source: true }), useDefaults: true }
  const asIs: Compiler = { ajv: createAjv({ useDefaults: false, source: true }), useDefaults: false }
  const problems: string[] = []
  const compiled = entries.map((entry) => {
    const name = entry.target === 'tool' ? `Tool "${entry.id}"` : `Check "${entry.id}"`
    const code: ValidatorCode = {}
    const add = (slot: keyof ValidatorCode, compiler: Compiler, schema: object | undefined, what: string) => {
      if (schema === undefined) return
      try {
        code[slot] = compileOne(compiler, schema)
      } catch (err) {
        problems.push(`${name} ${what} schema does not compile: ${(err as Error).message}`)
      }
    }
    add('input', withDefaults, entry.input, 'input')
    add('output', asIs, entry.output, 'output')
    add('config', asIs, entry.configSchema, 'config')
    return { ...entry, validators: code }
  })
  return { entries: compiled, problems }
}
