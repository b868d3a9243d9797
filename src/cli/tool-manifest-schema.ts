// The ToolManifest of POST /v1/tools (register-tool-manifest.md) as a JSON Schema, written
// from the spec so a pack's tools are refused here, before deploy, not by the runtime.
// Open where the spec is open; the fragments below are shared with guardrail checks.
// `x-reason` (ignored by Ajv) is what a problem says about a value the node refuses.

import { toolFlagProperties } from '../pack-index-schema.js'

const nonEmpty = { type: 'string', minLength: 1 }
const objectOf = (values: object) => ({ type: 'object', additionalProperties: values })

/** A plain major.minor.patch version, as tools and blocks carry. */
export const VERSION_PATTERN = '^\\d+\\.\\d+\\.\\d+$'

export const positiveInteger = { type: 'integer', minimum: 1, 'x-reason': 'is not an integer >= 1' }

export const sandboxSchema = { enum: ['none', 'context-isolated', 'strict'] }
export const limitsSchema = {
  type: 'object',
  required: ['memMB', 'cpuMs'],
  properties: { memMB: positiveInteger, cpuMs: positiveInteger },
}
export const networkSchema = { type: 'object', required: ['kind'], properties: { kind: { enum: ['none', 'unrestricted'] } } }

/** KINDGI_* env names configure Kindgi and are never a pack's (pack-index.md envName). */
export const RESERVED_ENV_PREFIX = 'KINDGI_'
/** Secrets and metadata keys under kindgi. are Kindgi's own (400 reserved-name-prefix, validation-failed). */
export const RESERVED_NAME_PREFIX = 'kindgi.'
export const reservedReason = (prefix: string) => `is under the reserved prefix ${prefix}: those names are Kindgi's own`
const notReserved = (prefix: string) => ({ not: { pattern: `^${prefix.replaceAll('.', '\\.')}` }, 'x-reason': reservedReason(prefix) })

const httpSpec = {
  type: 'object',
  required: ['kind', 'method', 'urlTemplate'],
  properties: {
    kind: { const: 'http' },
    method: { enum: ['GET', 'POST', 'PUT', 'PATCH', 'DELETE'] },
    urlTemplate: nonEmpty,
    headers: { type: 'array', items: { type: 'object', required: ['name', 'value'], properties: { name: nonEmpty, value: { type: 'string' } } } },
    authorization: {
      type: 'object',
      required: ['kind', 'secretRef'],
      properties: {
        kind: { const: 'bearer' },
        secretRef: {
          type: 'object',
          required: ['envName', 'name'],
          properties: { envName: nonEmpty, name: { allOf: [nonEmpty, notReserved(RESERVED_NAME_PREFIX)] } },
        },
      },
    },
    requestBody: { type: 'object', required: ['kind'], properties: { kind: { const: 'json-input' } } },
    timeoutMs: { type: 'integer', minimum: 1 },
    parseJson: { type: 'boolean' },
    successStatus: {
      type: 'object',
      required: ['min', 'max'],
      properties: { min: { type: 'integer', minimum: 100, maximum: 599 }, max: { type: 'integer', minimum: 100, maximum: 599 } },
    },
  },
}

const needsSpec = {
  type: 'object',
  properties: {
    env: { ...objectOf({ type: 'object' }), propertyNames: notReserved(RESERVED_ENV_PREFIX) },
    secrets: { ...objectOf({ type: 'object' }), propertyNames: notReserved(RESERVED_NAME_PREFIX) },
    config: objectOf({ type: 'object' }),
    capabilities: { type: 'array', items: { type: 'string' } },
    bindings: { type: 'array', items: { type: 'string' } },
    connections: objectOf({
      type: 'object',
      required: ['app', 'permissions', 'as'],
      properties: {
        app: { type: 'string', pattern: '^[a-z][a-z0-9-]{1,31}$' },
        permissions: { type: 'array', items: { type: 'string' }, minItems: 1, uniqueItems: true },
        as: { enum: ['person', 'company'] },
      },
    }),
  },
}

export const EFFECT_KINDS = ['reads', 'writes', 'deletes', 'network', 'spawns-run', 'emits-event', 'external-side-effect', 'sensitive-data-egress']

export const toolManifestSchema = {
  type: 'object',
  required: ['id', 'projectId', 'description', 'input', 'output'],
  properties: {
    id: nonEmpty,
    projectId: { type: 'string', format: 'uuid' },
    description: nonEmpty,
    version: { type: 'string', pattern: VERSION_PATTERN, 'x-reason': 'is not major.minor.patch' },
    input: { type: 'object' },
    output: { type: 'object' },
    needs: { type: 'array', items: { type: 'object', required: ['name'], properties: { name: nonEmpty, optional: { type: 'boolean' } } } },
    effects: {
      type: 'array',
      items: {
        type: 'object',
        required: ['kind'],
        properties: { kind: { enum: EFFECT_KINDS }, resource: { type: 'string' }, notes: { type: 'string' } },
      },
    },
    transport: { enum: ['auto', 'native', 'mcp'] },
    mcpEndpoint: { type: 'string' },
    metadata: { type: 'object', propertyNames: notReserved(RESERVED_NAME_PREFIX) },
    ...toolFlagProperties,
    sandbox: sandboxSchema,
    limits: limitsSchema,
    network: networkSchema,
    needsSpec,
    codeArtifactRef: {
      type: 'object',
      required: ['kind', 'imageRef', 'modulePath', 'artifactVersion'],
      properties: { kind: { const: 'oci' }, imageRef: nonEmpty, modulePath: nonEmpty, artifactVersion: nonEmpty },
    },
    spec: httpSpec,
  },
} as const
