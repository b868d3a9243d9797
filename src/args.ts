// Reads a command line of `--flag value`, `--flag=value` and switches into plain values, the
// same way for `serve` and every subcommand. Every bad argument is collected, not thrown.

export type ArgSpec<F extends string, S extends string> = {
  /** Options that take a value. */
  flags: readonly F[]
  /** Options that take none. */
  switches: readonly S[]
  /** Said after a stray word or an unknown option, e.g. "use --index FILE". */
  hint?: string
  /** What a flag's value is, when "needs a value" would say less (`--bundle-map needs a path`). */
  valueNames?: Partial<Record<F, string>>
}

export type Args<F extends string, S extends string> = { flags: Partial<Record<F, string>>; switches: Set<S>; problems: string[] }

export function parseArgv<F extends string, S extends string>(argv: string[], spec: ArgSpec<F, S>): Args<F, S> {
  const flags: Partial<Record<F, string>> = {}
  const switches = new Set<S>()
  const problems: string[] = []
  const hint = spec.hint === undefined ? '' : `: ${spec.hint}`
  for (let i = 0; i < argv.length; i++) {
    const arg = argv[i] as string
    if (!arg.startsWith('--')) {
      problems.push(`Unexpected argument "${arg}"${hint}`)
      continue
    }
    const eq = arg.indexOf('=')
    const name = eq === -1 ? arg.slice(2) : arg.slice(2, eq)
    if ((spec.switches as readonly string[]).includes(name)) {
      if (eq !== -1) problems.push(`--${name} takes no value`)
      switches.add(name as S)
      continue
    }
    let value: string | undefined
    if (eq !== -1) value = arg.slice(eq + 1)
    else if (i + 1 < argv.length && !(argv[i + 1] as string).startsWith('--')) value = argv[++i] // also an unknown option's: not a stray word
    if (!(spec.flags as readonly string[]).includes(name)) {
      problems.push(`Unknown option --${name}${hint}`)
      continue
    }
    if (value === undefined || value === '') {
      problems.push(`--${name} needs a ${spec.valueNames?.[name as F] ?? 'value'}`)
      continue
    }
    flags[name as F] = value
  }
  return { flags, switches, problems }
}
