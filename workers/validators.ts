// Turns Ajv standalone code, compiled once at boot by the front, into a validate function.
// The code is a small CommonJS module; its `require`s reach only Ajv's runtime helpers and
// ajv-formats' format checks, resolved from the host's own node_modules.

export type ValidateFunction = ((data: unknown) => boolean) & {
  errors?: Array<{ instancePath: string; schemaPath: string; keyword: string; params: unknown; message?: string }> | null
}

let requireFromHost: NodeJS.Require | undefined

/** Made on first use: most validators require nothing, and a strict call's process loads node:module only if one does. */
function hostRequire(id: string): unknown {
  requireFromHost ??= (process.getBuiltinModule('node:module') as typeof import('node:module')).createRequire(import.meta.url)
  return requireFromHost(id)
}

export function instantiate(code: string): ValidateFunction {
  const module = { exports: {} as unknown }
  new Function('require', 'module', 'exports', code)(hostRequire, module, module.exports)
  return module.exports as ValidateFunction
}
