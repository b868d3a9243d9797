// ctx.log: a small JSON-lines logger bound to one call, written to its process's stderr (fd 2,
// shared by every thread), a pipe the host passes on to the service's log as whole lines
// (src/pool/pack-output.ts). Every record carries the call's ids (its traceId and spanId
// included) and the fields the service's own lines carry but pid (docs/spec/CONTRACT.md §1): kind and event
// "log", subsystem, level as a word, severity, time and message. Pack fields never replace them.
import { writeSync } from 'node:fs'
import type { CallIds } from '../src/protocol/worker-messages.js'

export type CallLogger = Record<'debug' | 'info' | 'warn' | 'error', (a?: unknown, b?: unknown) => void>

type Level = keyof CallLogger

/** Cloud Logging's LogSeverity for each level. */
const SEVERITY = { debug: 'DEBUG', info: 'INFO', warn: 'WARNING', error: 'ERROR' } as const

export function callLogger(about: { target: 'tool' | 'check'; id: string }, ids: CallIds): CallLogger {
  const idKey = about.target === 'tool' ? 'toolId' : 'checkId'
  const bound = { kind: 'log', event: 'log', subsystem: 'pack', target: about.target, id: about.id, [idKey]: about.id, ...ids }
  const write = (level: Level) => (a?: unknown, b?: unknown) => {
    let msg: unknown = a
    let fields: Record<string, unknown> | undefined
    if (typeof a === 'object' && a !== null) {
      fields = a as Record<string, unknown>
      msg = b
    } else if (typeof b === 'object' && b !== null) {
      fields = b as Record<string, unknown>
    }
    const text = msg === undefined ? undefined : String(msg)
    const message = text ?? (typeof fields?.message === 'string' ? fields.message : `${about.target} ${about.id} logged at ${level}`)
    // First for the order a reader expects, again after the pack's fields so they cannot replace them.
    const head = { level, severity: SEVERITY[level], time: new Date().toISOString() }
    let line: string
    try {
      line = JSON.stringify({ ...head, ...fields, ...bound, ...head, message, msg: text })
    } catch {
      line = JSON.stringify({ ...head, ...bound, message, msg: text })
    }
    try {
      writeSync(2, `${line}\n`)
    } catch {
      // stderr closed: nothing sensible to do from pack code's logger
    }
  }
  return { debug: write('debug'), info: write('info'), warn: write('warn'), error: write('error') }
}
