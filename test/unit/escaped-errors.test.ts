// The front's last resort (src/escaped-errors.ts), in a process of its own: an error none of
// our code caught is logged as an internal-error line and drains the service, which exits 1;
// without it, Node would end the process with a stack trace and no drain.
import { spawnSync } from 'node:child_process'
import { fileURLToPath } from 'node:url'
import { describe, expect, it } from 'vitest'

const MODULE = fileURLToPath(new URL('../../dist/src/escaped-errors.js', import.meta.url))

/** Runs `trigger` after installing the policy with a log and a drain that print what they got. */
function runEscaping(trigger: string): { status: number | null; lines: Array<Record<string, unknown>> } {
  const script = `
    import { onEscapedErrors } from ${JSON.stringify(MODULE)}
    const log = { error: (kind, fields) => console.log(JSON.stringify({ kind, ...fields })) }
    onEscapedErrors(log, async () => {
      console.log(JSON.stringify({ kind: 'drained' }))
      setTimeout(() => process.exit(), 20)
    })
    setInterval(() => {}, 1000)
    ${trigger}
  `
  const run = spawnSync(process.execPath, ['--input-type=module', '-e', script], { encoding: 'utf8', timeout: 10_000 })
  return {
    status: run.status,
    lines: run.stdout
      .trim()
      .split('\n')
      .filter(Boolean)
      .map((l) => JSON.parse(l) as Record<string, unknown>),
  }
}

describe("an error that escapes the front's own code", () => {
  it('a throw in a callback is logged as internal-error, drains once, and the process exits 1', () => {
    const { status, lines } = runEscaping(`setTimeout(() => { throw new Error('bookkeeping broke') }, 10); setTimeout(() => { throw new Error('again') }, 15)`)
    expect(lines[0]).toMatchObject({ kind: 'internal-error', error: 'bookkeeping broke', escaped: 'uncaughtException', draining: true })
    expect(lines.filter((l) => l.kind === 'drained')).toHaveLength(1)
    expect(status).toBe(1)
  })

  it('a rejection no one awaited is logged as internal-error, drains, and the process exits 1', () => {
    const { status, lines } = runEscaping(`Promise.reject(new Error('a promise chain broke'))`)
    expect(lines[0]).toMatchObject({ kind: 'internal-error', error: 'a promise chain broke', escaped: 'unhandledRejection' })
    expect(lines.map((l) => l.kind)).toContain('drained')
    expect(status).toBe(1)
  })
})
