// Ajv's errors as the protocol's validation issues. Kept apart from Ajv itself so workers,
// which run precompiled validators, never import the compiler.
import type { ValidationIssue } from './wire.js'

type AjvError = { instancePath: string; schemaPath: string; keyword: string; params: unknown; message?: string }

export function toIssues(errors: AjvError[] | null | undefined): ValidationIssue[] {
  return (errors ?? []).map((e) => ({
    instancePath: e.instancePath,
    schemaPath: e.schemaPath,
    keyword: e.keyword,
    params: e.params as Record<string, unknown>,
    message: e.message ?? 'is invalid',
  }))
}
