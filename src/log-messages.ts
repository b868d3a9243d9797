// The `message` of each log record (docs/spec/CONTRACT.md §1): one short sentence a person reads in a log
// viewer, built from the record's own fields. It adds no information the fields lack and
// never holds what the fields must not (secrets, tokens, inputs).

type Fields = Record<string, unknown> | undefined

/** "a; b" for one or two problems, "a; b (and 3 more)" past that: a boot can report dozens. */
function problemsText(problems: unknown): string {
  if (!Array.isArray(problems) || problems.length === 0) return 'no problem given'
  const shown = problems.slice(0, 2).map(String).join('; ')
  return problems.length > 2 ? `${shown} (and ${problems.length - 2} more)` : shown
}

function namesText(names: unknown): string {
  return Array.isArray(names) ? names.map(String).join(', ') : String(names)
}

/** The call line's sentence: "call to tool echo: ok in 3 ms". Per call, so kept to one template. */
export function callMessage(fields: Fields): string {
  const about = fields?.target === undefined ? 'call (no tool or check named)' : `call to ${String(fields.target)} ${String(fields.id)}`
  return `${about}: ${String(fields?.outcome)} in ${String(fields?.durationMs)} ms`
}

export function messageOf(kind: string, fields: Fields): string {
  const f = fields ?? {}
  switch (kind) {
    case 'call':
      return callMessage(fields)
    case 'listening': {
      const metrics = f.metricsPort === undefined ? '' : `, metrics on port ${String(f.metricsPort)}`
      const unwalled = f.landlock === 'off' ? `; pack processes are not walled off by Landlock: ${String(f.landlockWhy)}` : ''
      return `listening on port ${String(f.port)}: pack ${String(f.packId)} ${String(f.artifactVersion)}${metrics}${unwalled}`
    }
    case 'config-invalid':
      return `configuration invalid: ${problemsText(f.problems)}`
    case 'boot-failed':
      return f.reload === true ? `reload failed, the previous pack keeps serving: ${problemsText(f.problems)}` : `boot failed: ${problemsText(f.problems)}`
    case 'missing-env':
      return f.check === 'warn'
        ? `required env missing, serving anyway (env check warn): ${namesText(f.names)}`
        : `required env missing, not ready until it is set: ${namesText(f.names)}`
    case 'env-dropped':
      return `env withheld from pack code by the env filter: ${namesText(f.names)}`
    case 'reloaded': {
      const after = Array.isArray(f.changed) && f.changed.length > 0 ? ` after a change to ${namesText(f.changed)}` : ''
      return `reloaded: pack ${String(f.packId)} ${String(f.artifactVersion)} (${String(f.indexHash)})${after}`
    }
    case 'worker-replaced':
      return f.id === undefined ? `worker replaced (${String(f.reason)})` : `worker replaced (${String(f.reason)}) after running ${String(f.id)}`
    case 'draining':
      return 'draining: new calls are refused while calls in flight finish'
    case 'stopped':
      return 'stopped'
    case 'call-not-started':
      return `call to ${String(f.target)} ${String(f.id)} not started: ${String(f.why)}`
    case 'internal-error':
      return `internal error: ${String(f.error)}`
    default:
      return kind.replaceAll('-', ' ')
  }
}
