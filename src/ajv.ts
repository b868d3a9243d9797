// One way to build an Ajv instance (draft 2020-12, all errors, formats), shared by the
// index checks, the CLI and the pack-schema compiler, so all judge JSON Schema alike.
// Judging a schema itself needs Ajv to compile the draft's meta-schema, the largest part of
// compiling a small schema: one instance does that, once a process (checkSchema), and the
// compilers trust what it passed, as they trust the service's own schemas (bench/PROFILE.md,
// twentieth pass).
import { Ajv2020 } from 'ajv/dist/2020.js'
import addFormatsModule from 'ajv-formats'

export { toIssues } from './protocol/issues.js'

const addFormats = addFormatsModule as unknown as (ajv: Ajv2020) => Ajv2020

/** `source`: keep the generated code, so a validator can be shipped to workers as text. */
export function createAjv(options: { useDefaults: boolean; source?: boolean }): Ajv2020 {
  return newAjv({ ...options, validateSchema: false })
}

function newAjv(options: { useDefaults: boolean; source?: boolean; validateSchema: boolean }): Ajv2020 {
  const ajv = new Ajv2020({
    allErrors: true,
    strict: false,
    useDefaults: options.useDefaults,
    validateFormats: true,
    validateSchema: options.validateSchema,
    // Without Ajv's optimizing pass, boot compiles a pack's schemas faster (bench/PROFILE.md, design figures).
    ...(options.source === true ? { code: { source: true, optimize: false } } : {}),
  })
  addFormats(ajv)
  return ajv
}

let checker: Ajv2020 | undefined

/**
 * Throws Ajv's own "schema is invalid: …" when `schema` is no valid JSON Schema (a pack's,
 * before it is compiled). What is not even an object is left to the compiler's own error.
 */
export function checkSchema(schema: unknown): void {
  if (typeof schema !== 'object' || schema === null) return
  checker ??= newAjv({ useDefaults: false, validateSchema: true })
  checker.validateSchema(schema, true)
}
