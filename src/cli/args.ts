// What every subcommand does with its command line first: --help prints its usage, bad
// arguments are named on stderr (exit 2), and the rest comes back as plain values.
import { parseArgv, type ArgSpec } from '../args.js'
import { EXIT, out, usageError } from './output.js'

export type CommandArgs<F extends string, S extends string> =
  | { kind: 'ok'; flags: Partial<Record<F, string>>; switches: Set<S> }
  | { kind: 'exit'; code: number }

export function commandArgs<F extends string, S extends string>(command: string, argv: string[], spec: ArgSpec<F, S>, usage: string): CommandArgs<F, S> {
  if (argv.includes('--help') || argv.includes('-h')) {
    out(usage)
    return { kind: 'exit', code: EXIT.ok }
  }
  const { flags, switches, problems } = parseArgv(argv, spec)
  if (problems.length > 0) return { kind: 'exit', code: usageError(command, problems) }
  return { kind: 'ok', flags, switches }
}

/** Names each required flag that is absent, as a problem. */
export function requireFlags<F extends string>(flags: Partial<Record<F, string>>, names: readonly F[]): string[] {
  return names.filter((name) => flags[name] === undefined).map((name) => `--${name} is required`)
}

export const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i
