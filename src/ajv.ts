// One way to build an Ajv instance (draft 2020-12, all errors, formats), shared by the
// index checks, the CLI and the pack-schema compiler, so all judge JSON Schema alike.
import { Ajv2020 } from 'ajv/dist/2020.js'
import addFormatsModule from 'ajv-formats'

export { toIssues } from './protocol/issues.js'

const addFormats = addFormatsModule as unknown as (ajv: Ajv2020) => Ajv2020

/** `source`: keep the generated code, so a validator can be shipped to workers as text. */
export function createAjv(options: { useDefaults: boolean; source?: boolean }): Ajv2020 {
  const ajv = new Ajv2020({
    allErrors: true,
    strict: false,
    useDefaults: options.useDefaults,
    validateFormats: true,
    // Without Ajv's optimizing pass, boot compiles a pack's schemas faster (bench/PROFILE.md, design figures).
    ...(options.source === true ? { code: { source: true, optimize: false } } : {}),
  })
  addFormats(ajv)
  return ajv
}
