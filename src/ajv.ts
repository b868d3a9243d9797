// One way to build an Ajv instance (draft 2020-12, all errors, formats), shared by the
// front (index checks) and the workers (pack schemas), so both judge JSON Schema alike.
import { Ajv2020 } from 'ajv/dist/2020.js'
import type { ErrorObject } from 'ajv'
import addFormatsModule from 'ajv-formats'
import type { ValidationIssue } from './protocol/wire.js'

const addFormats = addFormatsModule as unknown as (ajv: Ajv2020) => Ajv2020

export function createAjv(options: { useDefaults: boolean }): Ajv2020 {
  const ajv = new Ajv2020({ allErrors: true, strict: false, useDefaults: options.useDefaults, validateFormats: true })
  addFormats(ajv)
  return ajv
}

export function toIssues(errors: ErrorObject[] | null | undefined): ValidationIssue[] {
  return (errors ?? []).map((e) => ({
    instancePath: e.instancePath,
    schemaPath: e.schemaPath,
    keyword: e.keyword,
    params: e.params as Record<string, unknown>,
    message: e.message ?? 'is invalid',
  }))
}
