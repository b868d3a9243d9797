// The log for people (issue 18, KINDGI_PACK_LOG_FORMAT): on a terminal, or when forced, each
// record is one line through pino-pretty (time, level, kind, message with the tool, outcome
// and duration, the trace id, then every other field), the same records as the JSON log,
// pack code's ctx.log lines included; on a pipe, and when forced, JSON lines as ever. A real
// terminal is `script`'s pseudo-terminal, as a person's shell has.
import { spawn, spawnSync, type ChildProcess } from 'node:child_process'
import { join } from 'node:path'
import { afterEach, describe, expect, it } from 'vitest'
import { baseEnv, BIN, post, ROOT, spawnHost, TOKEN, type Host } from '../helpers/host.js'

const INDEX = join(ROOT, 'examples/hello-pack/index.json')
const TRACE = '4bf92f3577b34da6a3ce929d0e0e4736'
const TRACEPARENT = `00-${TRACE}-00f067aa0ba902b7-01`
const GREET = { v: 2, kind: 'invoke', tool: { id: 'hello.greet' }, input: { name: 'Ana' }, ctx: { tenantId: 't1', runId: 'r1' } }
/** What a pretty line starts with: local time, level, pid (when the record has one), then `[kind]`. */
const HEAD = /^\[\d\d:\d\d:\d\d\.\d{3}\] (INFO|WARN|ERROR) (?:\(([^)]*)\))?: \[([a-z-]+)\] /
const HAS_SCRIPT = spawnSync('script', ['--version']).status === 0

type Run = { proc: ChildProcess; text(): string; waitFor(pattern: RegExp, timeoutMs?: number): Promise<RegExpMatchArray>; exited: Promise<number | null> }

/** Starts `command` and collects what it writes (stdout and stderr together), as text. */
function run(command: string, args: string[], env: Record<string, string>): Run {
  const proc = spawn(command, args, { env, stdio: ['ignore', 'pipe', 'pipe'] })
  let text = ''
  const waiters: Array<() => void> = []
  const take = (d: Buffer) => {
    text += d.toString()
    for (const w of waiters.splice(0)) w()
  }
  proc.stdout!.on('data', take)
  proc.stderr!.on('data', take)
  const exited = new Promise<number | null>((resolve) => proc.once('exit', (code) => resolve(code)))
  const waitFor = (pattern: RegExp, timeoutMs = 15_000) =>
    new Promise<RegExpMatchArray>((resolve, reject) => {
      const timer = setTimeout(() => reject(new Error(`no ${pattern} within ${timeoutMs} ms in:\n${text}`)), timeoutMs)
      const check = () => {
        const found = pattern.exec(text)
        if (found !== null) {
          clearTimeout(timer)
          resolve(found)
        } else waiters.push(check)
      }
      check()
    })
  return { proc, text: () => text, waitFor, exited }
}

const started: Run[] = []
afterEach(async () => {
  for (const r of started.splice(0)) {
    r.proc.kill('SIGTERM')
    await r.exited
  }
})

function host(env: Record<string, string>): Run {
  const r = run(process.execPath, [BIN, '--index', INDEX, '--host', '127.0.0.1'], { ...baseEnv(), PORT: '0', KINDGI_PACK_SERVICE_TOKEN: TOKEN, ...env })
  started.push(r)
  return r
}

/** The same, on a terminal of its own: `script` gives it a pseudo-terminal as stdout and stderr. */
function hostOnTerminal(env: Record<string, string>): Run {
  const command = [process.execPath, BIN, '--index', INDEX, '--host', '127.0.0.1'].join(' ')
  const r = run('script', ['-qefc', command, '/dev/null'], { ...baseEnv(), PORT: '0', KINDGI_PACK_SERVICE_TOKEN: TOKEN, ...env })
  started.push(r)
  return r
}

async function greet(port: number): Promise<void> {
  const answer = await post({ url: `http://127.0.0.1:${port}` } as Host, GREET, { traceparent: TRACEPARENT })
  expect(answer.body).toEqual({ v: 2, kind: 'result', output: { greeting: 'Hello, Ana!' } })
}

/** A pretty line's parts: its head, and the fields printed as JSON after the message. */
function parts(line: string): { level: string; pid: string | undefined; kind: string; message: string; fields: Record<string, unknown> } {
  const head = HEAD.exec(line)
  expect(head, line).not.toBeNull()
  const rest = line.slice(head![0].length)
  const brace = rest.indexOf(' {"')
  return {
    level: head![1]!,
    pid: head![2],
    kind: head![3]!,
    message: brace === -1 ? rest : rest.slice(0, brace),
    fields: brace === -1 ? {} : (JSON.parse(rest.slice(brace + 1)) as Record<string, unknown>),
  }
}

describe('KINDGI_PACK_LOG_FORMAT=pretty, on a pipe', () => {
  it("prints one line a record for people: time, level, kind, the call's tool, outcome, duration and trace id, no colours", async () => {
    const h = host({ KINDGI_PACK_LOG_FORMAT: 'pretty' })
    const port = Number((await h.waitFor(/\[listening\] listening on port (\d+)/))[1])
    await greet(port)
    const line = (await h.waitFor(/^.*\[call\].*$/m))[0]
    expect(line).toMatch(new RegExp(`\\[call\\] call to tool hello\\.greet: ok in [\\d.]+ ms \\(trace ${TRACE}\\) \\{`))
    expect(parts(line)).toMatchObject({ level: 'INFO', kind: 'call', fields: { toolId: 'hello.greet', outcome: 'ok', tenantId: 't1', runId: 'r1' } })
    expect(h.text()).not.toContain('\x1b[')
    expect(
      h
        .text()
        .split('\n')
        .filter((l) => l.startsWith('{')),
    ).toEqual([])
  })

  it("holds the same fields as the JSON record, pack code's ctx.log lines included", async () => {
    const json = await spawnHost({ index: INDEX })
    await greet(json.port)
    const record = await json.waitFor('call')
    const logged = await json.waitFor('log')
    await json.stop()

    const h = host({ KINDGI_PACK_LOG_FORMAT: 'pretty' })
    const port = Number((await h.waitFor(/\[listening\] listening on port (\d+)/))[1])
    await greet(port)
    const call = parts((await h.waitFor(/^.*\[call\].*$/m))[0])
    const log = parts((await h.waitFor(/^.*\[log\].*$/m))[0])

    // What the head shows, or what only repeats another field (event = kind, severity = level, subsystem "pack").
    const inHead = ['time', 'level', 'severity', 'pid', 'subsystem', 'event', 'kind', 'message', 'traceId', 'name']
    const rest = (r: Record<string, unknown>) =>
      Object.keys(r)
        .filter((k) => !inHead.includes(k))
        .sort()
    const varying = ['durationMs', 'spanId']
    expect(Object.keys(call.fields).sort()).toEqual(rest(record))
    for (const key of rest(record)) if (!varying.includes(key)) expect(call.fields[key], key).toEqual(record[key])
    expect(Object.keys(log.fields).sort()).toEqual(rest(logged))
    // The tool's own field `name` is one pino-pretty shows in the head, labelled; the trace id is said there too.
    expect(logged.name).toBe('Ana')
    // Its pid is the pack process's that wrote it, never the front's (src/pool/pack-records.ts).
    expect(logged.pid).not.toBe(record.pid)
    expect(log.pid).toMatch(/^name="Ana"\/\d+$/)
    expect(log.message).toBe(`greeting (trace ${TRACE})`)
    expect(call.message).toMatch(/^call to tool hello\.greet: ok in [\d.]+ ms \(trace 4bf92f3577b34da6a3ce929d0e0e4736\)$/)
  })

  it('SIGTERM: the draining and stopped lines are printed before the process exits 0', async () => {
    const h = host({ KINDGI_PACK_LOG_FORMAT: 'pretty' })
    await h.waitFor(/\[listening\]/)
    h.proc.kill('SIGTERM')
    expect(await h.exited).toBe(0)
    expect(h.text()).toMatch(/\[draining\] draining: new calls are refused[^\n]*\n[^\n]*\[stopped\] stopped/)
  })

  it('the service stops when the process printing its log is killed outright (SIGKILL)', async () => {
    const h = host({ KINDGI_PACK_LOG_FORMAT: 'pretty' })
    const service = Number((await h.waitFor(/INFO \((\d+)\): \[listening\]/))[1])
    expect(service).not.toBe(h.proc.pid)
    h.proc.kill('SIGKILL')
    await h.exited
    const alive = () => {
      try {
        process.kill(service, 0)
        return true
      } catch {
        return false
      }
    }
    for (let i = 0; i < 200 && alive(); i++) await new Promise((r) => setTimeout(r, 50))
    expect(alive()).toBe(false)
  })

  it('a bad setting is a config-invalid line for people too, and exit 1', async () => {
    const h = host({ KINDGI_PACK_LOG_FORMAT: 'pretty', PORT: 'eighty' })
    expect(await h.exited).toBe(1)
    expect(h.text()).toMatch(/ERROR \(\d+\): \[config-invalid\] configuration invalid: PORT/)
  })
})

describe('KINDGI_PACK_LOG_FORMAT unset (auto)', () => {
  it('on a pipe, as in production and under a log collector: JSON lines', async () => {
    const h = host({})
    const listening = JSON.parse((await h.waitFor(/^\{.*"kind":"listening".*\}$/m))[0]) as Record<string, unknown>
    expect(listening).toMatchObject({ level: 'info', kind: 'listening', subsystem: 'pack' })
    expect(h.text()).not.toMatch(HEAD)
  })

  it.skipIf(!HAS_SCRIPT)('on a terminal: lines for people, the level in colour', async () => {
    const h = hostOnTerminal({})
    const line = (await h.waitFor(/^.*\[listening\] listening on port \d+.*$/m))[0]
    expect(line).toContain('\x1b[32mINFO\x1b[39m')
    expect(h.text()).not.toContain('{"level"')
  })

  it.skipIf(!HAS_SCRIPT)('on a terminal with NO_COLOR set: lines for people without colour', async () => {
    const h = hostOnTerminal({ NO_COLOR: '1' })
    const line = (await h.waitFor(/^.*\[listening\] listening on port \d+.*$/m))[0]
    expect(line).toMatch(/\] INFO \(\d+\): \[listening\]/)
    expect(line).not.toContain('\x1b[')
  })
})

describe('KINDGI_PACK_LOG_FORMAT=json', () => {
  it.skipIf(!HAS_SCRIPT)('keeps JSON lines even on a terminal', async () => {
    const h = hostOnTerminal({ KINDGI_PACK_LOG_FORMAT: 'json' })
    const listening = JSON.parse((await h.waitFor(/^\{.*"kind":"listening".*\}\r?$/m))[0].trim()) as Record<string, unknown>
    expect(listening).toMatchObject({ kind: 'listening', level: 'info' })
    expect(h.text()).not.toMatch(/\[listening\]/)
  })
})

describe('KINDGI_PACK_LOG_FORMAT with a value it does not know', () => {
  it('is refused in the one config-invalid line (JSON: nothing says who reads it), exit 1', async () => {
    const h = host({ KINDGI_PACK_LOG_FORMAT: 'colour' })
    expect(await h.exited).toBe(1)
    const line = JSON.parse((await h.waitFor(/^\{.*"kind":"config-invalid".*\}$/m))[0]) as { problems: string[] }
    expect(line.problems).toContain('KINDGI_PACK_LOG_FORMAT must be "auto", "pretty" or "json", not "colour"')
  })
})
