// Turns Ajv standalone code, compiled once at boot by the front, into a validate function.
// The code is a small CommonJS module; its `require`s reach only Ajv's runtime helpers and
// ajv-formats' format checks, resolved from the host's own node_modules.
import { createRequire } from 'node:module'

export type ValidateFunction = ((data: unknown) => boolean) & {
  errors?: Array<{ instancePath: string; schemaPath: string; keyword: string; params: unknown; message?: string }> | null
}

const requireFromHost = createRequire(import.meta.url)

export function instantiate(code: string): ValidateFunction {
  const module = { exports: {} as unknown }
  new Function('require', 'module', 'exports', code)(requireFromHost, module, module.exports)
  return module.exports as ValidateFunction
}
