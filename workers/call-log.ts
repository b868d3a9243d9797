// ctx.log: a small JSON-lines logger bound to one call, written straight to the service's
// stderr (fd 2, shared by every thread) with the call's ids on every record.
import { writeSync } from 'node:fs'
import type { CallIds } from '../src/protocol/worker-messages.js'

export type CallLogger = Record<'debug' | 'info' | 'warn' | 'error', (a?: unknown, b?: unknown) => void>

const LEVELS = { debug: 20, info: 30, warn: 40, error: 50 } as const

export function callLogger(about: { target: string; id: string }, ids: CallIds): CallLogger {
  const bound = { kind: 'log', target: about.target, id: about.id, ...ids }
  const write = (level: keyof typeof LEVELS) => (a?: unknown, b?: unknown) => {
    let msg: unknown = a
    let fields: object | undefined
    if (typeof a === 'object' && a !== null) {
      fields = a
      msg = b
    } else if (typeof b === 'object' && b !== null) {
      fields = b
    }
    const record = { level: LEVELS[level], time: new Date().toISOString(), ...fields, ...bound, msg: msg === undefined ? undefined : String(msg) }
    let line: string
    try {
      line = JSON.stringify(record)
    } catch {
      line = JSON.stringify({ ...bound, level: LEVELS[level], time: new Date().toISOString(), msg: String(msg) })
    }
    try {
      writeSync(2, line + '\n')
    } catch {
      // stderr closed: nothing sensible to do from pack code's logger
    }
  }
  return { debug: write('debug'), info: write('info'), warn: write('warn'), error: write('error') }
}
