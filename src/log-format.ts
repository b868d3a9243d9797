// KINDGI_PACK_LOG_FORMAT: whether the service's log is JSON lines (for machines: production,
// pipes, log collectors) or lines for people (a terminal). Decided once, before the config is
// read, since a config-invalid line must already be written in the chosen format.

export type LogFormat = 'json' | 'pretty'

export type LogFormatSetting = { kind: 'ok'; setting: 'auto' | LogFormat } | { kind: 'error'; problem: string }

const SETTINGS = ['auto', 'pretty', 'json'] as const

export function readLogFormat(raw: string | undefined): LogFormatSetting {
  if (raw === undefined || raw === '') return { kind: 'ok', setting: 'auto' }
  if ((SETTINGS as readonly string[]).includes(raw)) return { kind: 'ok', setting: raw as 'auto' | LogFormat }
  return { kind: 'error', problem: `KINDGI_PACK_LOG_FORMAT must be "auto", "pretty" or "json", not "${raw}"` }
}

/**
 * `auto` is for people only when stderr is a terminal. A bad value logs JSON: the config
 * check then reports it in its config-invalid line, which a collector must be able to read.
 */
export function chooseLogFormat(raw: string | undefined, stderrIsTerminal: boolean): LogFormat {
  const read = readLogFormat(raw)
  if (read.kind === 'error') return 'json'
  if (read.setting === 'auto') return stderrIsTerminal ? 'pretty' : 'json'
  return read.setting
}
