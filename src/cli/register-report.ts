// How `register` shows what it does: the requests of a dry run, a progress line per tool
// (stderr), and the summary (a table, or JSON with --json). The token never reaches here.
import { count, out, outJson } from './output.js'
import type { RuntimeError } from './register-answer.js'
import type { Outcome, Prepared } from './register-send.js'

export function printDryRun(url: string, requests: Prepared[], json: boolean): void {
  const shown = requests.map((p) => ({
    method: 'POST',
    url,
    headers: { Authorization: 'Bearer ***', 'Content-Type': 'application/json', 'Idempotency-Key': p.key },
    body: p.manifest,
  }))
  if (json) {
    outJson({ dryRun: true, requests: shown })
    return
  }
  const blocks = shown.map((r) =>
    [`${r.method} ${r.url}`, ...Object.entries(r.headers).map(([k, v]) => `${k}: ${v}`), '', JSON.stringify(r.body, null, 2)].join('\n'),
  )
  out(`${blocks.join('\n\n')}\n\nDry run: ${count(requests.length, 'request')} not sent.`)
}

function answer(status: number | undefined, error: RuntimeError | undefined): string {
  return [status, error?.code].filter((part) => part !== undefined).join(' ') || 'no answer'
}

export function retryLine(p: Prepared, attempt: number, maxAttempts: number, waitMs: number, status: number, error: RuntimeError | undefined): string {
  return `retry      ${p.label} in ${Math.ceil(waitMs / 1000)} s: ${answer(status, error)} (attempt ${attempt} of ${maxAttempts})`
}

export function progressLine(p: Prepared, outcome: Outcome): string {
  switch (outcome.kind) {
    case 'registered':
      return `registered ${p.label}`
    case 'already-registered':
      return `already    ${p.label} (409 tool-already-registered)`
    case 'skipped':
      return `skipped    ${p.label}: ${outcome.reason}`
    case 'failed': {
      const lines = [`failed     ${p.label}: ${answer(outcome.status, outcome.error)}: ${outcome.error.message}`]
      if (outcome.error.details !== undefined) lines.push(`           details: ${JSON.stringify(outcome.error.details)}`)
      if (outcome.error.requestId !== undefined) lines.push(`           requestId: ${outcome.error.requestId}`)
      return lines.join('\n')
    }
  }
}

const RESULT_WORDS: Record<Outcome['kind'], string> = {
  registered: 'registered',
  'already-registered': 'already registered',
  failed: 'failed',
  skipped: 'skipped',
}

export function summaryTable(requests: Prepared[], outcomes: Outcome[]): string {
  const rows = requests.map((p, i) => {
    const o = outcomes[i] as Outcome
    const got = o.kind === 'skipped' ? '-' : answer(o.status, o.kind === 'registered' ? undefined : o.error)
    return [p.manifest.id, p.manifest.version ?? '-', RESULT_WORDS[o.kind], String(o.attempts), got]
  })
  const table = [['TOOL', 'VERSION', 'RESULT', 'ATTEMPTS', 'ANSWER'], ...rows]
  const widths = table[0]!.map((_, c) => Math.max(...table.map((row) => (row[c] as string).length)))
  const lines = table.map((row) =>
    row
      .map((cell, c) => cell.padEnd(widths[c] as number))
      .join('  ')
      .trimEnd(),
  )
  const counts = (Object.keys(RESULT_WORDS) as Outcome['kind'][])
    .map((kind) => [RESULT_WORDS[kind], outcomes.filter((o) => o.kind === kind).length] as const)
    .filter(([, n]) => n > 0)
    .map(([word, n]) => `${n} ${word}`)
  return [...lines, '', `${count(requests.length, 'tool')}: ${counts.join(', ')}`].join('\n')
}

export function jsonResult(p: Prepared, outcome: Outcome): Record<string, unknown> {
  const { kind, ...rest } = outcome
  return { id: p.manifest.id, version: p.manifest.version, idempotencyKey: p.key, result: kind, ...rest }
}
