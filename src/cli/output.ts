// How the subcommands talk: results on stdout (text, or one JSON document with --json),
// progress and errors on stderr, and the exit codes every subcommand shares.

/** A problem found in a pack, with the JSON Pointer of what it is about ("" for the whole file). */
export type Problem = { path: string; message: string }

export const EXIT = { ok: 0, problems: 1, usage: 2 } as const

// Captured at load: while `check` runs pack code, stdout is pointed at stderr so whatever a
// module prints cannot corrupt the result a script reads.
const stdoutWrite = process.stdout.write.bind(process.stdout)

export function out(text: string): void {
  stdoutWrite(text.endsWith('\n') ? text : `${text}\n`)
}

export function err(text: string): void {
  process.stderr.write(text.endsWith('\n') ? text : `${text}\n`)
}

export function outJson(value: unknown): void {
  out(JSON.stringify(value, null, 2))
}

/** Sends what pack code writes to stdout to stderr until the returned function is called. */
export function stdoutToStderr(): () => void {
  const original = process.stdout.write
  process.stdout.write = process.stderr.write.bind(process.stderr) as typeof process.stdout.write
  return () => {
    process.stdout.write = original
  }
}

/** "1 problem", "3 problems". */
export function count(n: number, noun: string): string {
  return `${n} ${noun}${n === 1 ? '' : 's'}`
}

export function problemLine(problem: Problem): string {
  return `${problem.path === '' ? '(root)' : problem.path}: ${problem.message}`
}

/** Prints problems: one a line as text, or `{ ok: false, problems }` with --json. */
export function printProblems(heading: string, problems: Problem[], json: boolean): void {
  if (json) outJson({ ok: false, problems })
  else out([heading, ...problems.map(problemLine)].join('\n'))
}

export function usageError(command: string, problems: string[]): number {
  err([...problems.map((p) => `kindgi-pack-host ${command}: ${p}`), `Run "kindgi-pack-host ${command} --help" for usage.`].join('\n'))
  return EXIT.usage
}

/** JSON Pointer (RFC 6901) of a path of keys and indexes. */
export function pointer(...parts: Array<string | number>): string {
  return parts.map((p) => `/${String(p).replaceAll('~', '~0').replaceAll('/', '~1')}`).join('')
}
