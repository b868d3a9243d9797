// docs/spec/CONTRACT.md §1: arguments and environment, config-invalid and boot-failed as one line each,
// listening only after every module loaded, and the SIGTERM/SIGINT drain.
import { closeSync, constants, existsSync, openSync, readFileSync, readSync, statSync, writeFileSync } from 'node:fs'
import { join } from 'node:path'
import { createServer } from 'node:net'
import type { AddressInfo } from 'node:net'
import { describe, expect, it } from 'vitest'
import { execFileSync, spawn } from 'node:child_process'
import { BASIC_INDEX, BIN, baseEnv, FIXTURES, invoke, request, sleep, spawnHost, TOKEN, within } from '../helpers/host.js'
import { tempDirs } from '../helpers/temp-dir.js'

const tempDir = tempDirs()
const dir = tempDir('kph-process-')

describe('config-invalid', () => {
  it('collects every bad setting into one line and exits 1', async () => {
    const host = await spawnHost({
      waitListening: false,
      env: {
        KINDGI_PACK_SERVICE_TOKEN: undefined,
        PORT: '70000',
        KINDGI_PACK_SERVICE_MAX_CONCURRENCY: '0',
        KINDGI_PACK_ENV_CHECK: 'loose',
        KINDGI_PACK_ENV_FILTER: 'maybe',
        KINDGI_PACK_SANDBOX: 'jail',
        NODE_OPTIONS: '--max-old-space-size=4096',
      },
    })
    expect(await host.exited).toBe(1)
    const lines = host.lines.filter((l) => l.kind === 'config-invalid')
    expect(lines).toHaveLength(1)
    const problems = lines[0]!.problems as string[]
    expect(problems).toHaveLength(7)
    for (const word of ['PORT', 'MAX_CONCURRENCY', 'ENV_CHECK', 'ENV_FILTER', 'SANDBOX', 'max-old-space-size', 'KINDGI_PACK_SERVICE_TOKEN']) {
      expect(problems.some((p) => p.includes(word))).toBe(true)
    }
  })
  it('refuses a token that is empty after trimming or holds non-printable ASCII', async () => {
    for (const token of ['   ', 'has space', 'tab\there', 'é-token']) {
      const host = await spawnHost({ waitListening: false, env: { KINDGI_PACK_SERVICE_TOKEN: token } })
      expect(await host.exited).toBe(1)
      expect(host.lines.find((l) => l.kind === 'config-invalid')).toBeDefined()
    }
  })
  it('refuses a token file together with a token variable, and an unreadable token file', async () => {
    const both = await spawnHost({ waitListening: false, env: { KINDGI_PACK_SERVICE_TOKEN_FILE: join(dir, 'x') } })
    expect(await both.exited).toBe(1)
    expect(JSON.stringify(both.lines)).toContain('not both')
    const missing = await spawnHost({
      waitListening: false,
      env: { KINDGI_PACK_SERVICE_TOKEN: undefined, KINDGI_PACK_SERVICE_TOKEN_FILE: join(dir, 'absent') },
    })
    expect(await missing.exited).toBe(1)
    expect(missing.lines.find((l) => l.kind === 'config-invalid')).toBeDefined()
  })
  it('an unknown option is a config problem naming it', async () => {
    const host = await spawnHost({ waitListening: false, args: ['--index', BASIC_INDEX, '--colour', 'blue'] })
    expect(await host.exited).toBe(1)
    expect((host.lines.find((l) => l.kind === 'config-invalid')!.problems as string[])[0]).toContain('--colour')
  })
})

describe('arguments and environment', () => {
  it('reads the token from KINDGI_PACK_SERVICE_TOKEN_FILE, trimming its trailing newline', async () => {
    const file = join(dir, 'token')
    writeFileSync(file, 'from-a-file\n')
    const host = await spawnHost({ env: { KINDGI_PACK_SERVICE_TOKEN: undefined, KINDGI_PACK_SERVICE_TOKEN_FILE: file } })
    try {
      expect((await request(host, '/v1/info', { token: 'from-a-file' })).status).toBe(200)
      expect((await request(host, '/v1/info')).status).toBe(401)
    } finally {
      await host.stop()
    }
  })
  it('takes --flag=value, the serve subcommand, and KINDGI_PACK_INDEX; an argument wins over the environment', async () => {
    const host = await spawnHost({ args: ['serve', `--index=${BASIC_INDEX}`, '--host=127.0.0.1'], env: { KINDGI_PACK_INDEX: join(dir, 'nowhere.json') } })
    try {
      expect((await request(host, '/v1/info')).body.packId).toBe('fixture')
    } finally {
      await host.stop()
    }
    const fromEnv = await spawnHost({ args: ['--host', '127.0.0.1'], env: { KINDGI_PACK_INDEX: BASIC_INDEX } })
    try {
      expect((await request(fromEnv, '/v1/info')).body.packId).toBe('fixture')
    } finally {
      await fromEnv.stop()
    }
  })
  it('resolves modulePaths against --module-root when given', async () => {
    const index = join(dir, 'elsewhere.json')
    writeFileSync(index, readFileSync(BASIC_INDEX))
    const host = await spawnHost({ args: ['--index', index, '--module-root', `${FIXTURES}/basic-pack`, '--host', '127.0.0.1'] })
    try {
      expect((await invoke(host, 'echo', { ok: true })).body.output).toEqual({ ok: true })
    } finally {
      await host.stop()
    }
  })
})

describe('boot-failed', () => {
  it('an unreadable index is one boot-failed line "Cannot read the pack index: …", exit 1', async () => {
    const host = await spawnHost({ waitListening: false, args: ['--index', join(dir, 'none.json')] })
    expect(await host.exited).toBe(1)
    const line = host.lines.find((l) => l.kind === 'boot-failed')!
    expect((line.problems as string[])[0]).toMatch(/^Cannot read the pack index: /)
  })
  it('an envelope other than v1 is "Index envelope v<v> is not v1"', async () => {
    const index = join(dir, 'v2.json')
    writeFileSync(index, JSON.stringify({ v: 2 }))
    const host = await spawnHost({ waitListening: false, args: ['--index', index] })
    expect(await host.exited).toBe(1)
    expect(host.lines.find((l) => l.kind === 'boot-failed')!.problems).toEqual(['Index envelope v2 is not v1'])
  })
  it('an index that breaks pack-index.md lists each violation', async () => {
    const index = join(dir, 'shape.json')
    writeFileSync(index, JSON.stringify({ v: 1, packId: 'p', tools: [{ id: 'x' }], guardrails: [], agents: [], flows: [] }))
    const host = await spawnHost({ waitListening: false, args: ['--index', index] })
    expect(await host.exited).toBe(1)
    const problems = host.lines.find((l) => l.kind === 'boot-failed')!.problems as string[]
    expect(problems.length).toBeGreaterThanOrEqual(4)
    expect(problems.join('\n')).toMatch(/packVersion/)
    expect(problems.join('\n')).toMatch(/\/tools\/0/)
  })
  it('a missing module, a schema that does not compile, a module that throws while loading and one without a handler or check are all in ONE line', async () => {
    const host = await spawnHost({ waitListening: false, index: `${FIXTURES}/broken-pack/index.json` })
    expect(await host.exited).toBe(1)
    const failed = host.lines.filter((l) => l.kind === 'boot-failed')
    expect(failed).toHaveLength(1)
    const problems = failed[0]!.problems as string[]
    expect(problems).toContain('Missing module: tools/missing.js')
    expect(problems.some((p) => p.includes('bad-schema') && p.includes('does not compile'))).toBe(true)
    expect(problems.some((p) => p.includes('tools/throws-on-load.js') && p.includes('cannot start without a database'))).toBe(true)
    expect(problems.some((p) => p.includes('tools/no-export.js') && p.includes('no handler'))).toBe(true)
    expect(problems.some((p) => p.includes('no-check') && p.includes('no check'))).toBe(true)
    expect(host.lines.some((l) => l.kind === 'listening')).toBe(false)
  })
})

describe('a port already in use', () => {
  it('is one boot-failed line naming the address, exit 1, not a stack trace', async () => {
    const blocker = createServer()
    await new Promise<void>((resolve) => blocker.listen(0, '127.0.0.1', resolve))
    const port = (blocker.address() as AddressInfo).port
    try {
      const host = await spawnHost({ waitListening: false, env: { PORT: String(port) } })
      expect(await host.exited).toBe(1)
      expect(host.lines.filter((l) => l.kind === 'non-json')).toEqual([])
      const failed = host.lines.find((l) => l.kind === 'boot-failed')!
      expect((failed.problems as string[])[0]).toMatch(/EADDRINUSE/)
    } finally {
      blocker.close()
    }
  })
})

describe('listening', () => {
  it('comes only after every module has loaded in a worker, with port, packId and artifactVersion', async () => {
    const marker = join(dir, 'slow-loaded')
    const host = await spawnHost({ index: `${FIXTURES}/slow-load-pack/index.json`, env: { SLOW_LOAD_MARKER: marker } })
    try {
      const listening = host.lines.find((l) => l.kind === 'listening')!
      expect(listening).toMatchObject({ packId: 'slow', artifactVersion: '1' })
      expect(listening.port).toBe(host.port)
      expect(statSync(marker).isFile()).toBe(true)
      expect(Number(readFileSync(marker, 'utf8'))).toBeLessThanOrEqual(Date.parse(listening.time as string))
      expect((await request(host, '/readyz', { token: null })).status).toBe(200)
    } finally {
      await host.stop()
    }
  })
})

describe('drain', () => {
  it('SIGTERM writes draining, answers 503 to probes and new invokes, finishes the call in flight, writes stopped and exits 0', async () => {
    const host = await spawnHost()
    const begun = join(dir, 'started-drain')
    const held = invoke(host, 'sleep', { ms: 1500, started: begun })
    expect(await within(5_000, () => existsSync(begun)), 'the held call started').toBe(true)
    host.proc.kill('SIGTERM')
    await host.waitFor('draining')
    const ready = await request(host, '/readyz', { token: null })
    expect(ready).toMatchObject({ status: 503, body: { error: 'draining' } })
    expect(ready.headers.get('retry-after')).toBe('1')
    const refused = await invoke(host, 'echo')
    expect(refused).toMatchObject({ status: 503, body: { error: 'draining' } })
    expect((await held).body).toEqual({ v: 2, kind: 'result', output: { slept: 1500 } })
    expect(await host.exited).toBe(0)
    const kinds = host.lines.map((l) => l.kind)
    expect(kinds.indexOf('stopped')).toBeGreaterThan(kinds.indexOf('draining'))
  })
  it('SIGINT drains the same way', async () => {
    const host = await spawnHost()
    host.proc.kill('SIGINT')
    expect(await host.exited).toBe(0)
    expect(host.lines.map((l) => l.kind)).toEqual(expect.arrayContaining(['draining', 'stopped']))
  })
  it('a call that outlives the 8 s drain does not keep the process: it exits 0 after the drain', async () => {
    const host = await spawnHost()
    const begun = join(dir, 'started-outlives')
    void invoke(host, 'sleep', { ms: 60_000, started: begun }).catch(() => undefined)
    expect(await within(5_000, () => existsSync(begun)), 'the long call started').toBe(true)
    const started = Date.now()
    host.proc.kill('SIGTERM')
    expect(await host.exited).toBe(0)
    const took = Date.now() - started
    expect(took).toBeGreaterThan(7_500)
    expect(took).toBeLessThan(11_000)
  }, 20_000)
})

describe('bug: a host whose stderr reader has gone ignored SIGTERM', () => {
  it('still drains and exits 0 when every log write fails with EPIPE', async () => {
    // A real pipe (a FIFO), as when a log collector reading the service's stderr dies.
    const fifo = join(dir, 'stderr.fifo')
    execFileSync('mkfifo', [fifo])
    const reader = openSync(fifo, constants.O_RDONLY | constants.O_NONBLOCK)
    const writer = openSync(fifo, 'w')
    const proc = spawn(process.execPath, [BIN, '--index', BASIC_INDEX, '--host', '127.0.0.1'], {
      env: { ...baseEnv(), PORT: '0', KINDGI_PACK_SERVICE_TOKEN: TOKEN, FIXTURE_REQUIRED: 'set' },
      stdio: ['ignore', 'ignore', writer],
    })
    closeSync(writer)
    const exited = new Promise<number | null>((resolve) => proc.once('exit', (code) => resolve(code)))
    let seen = ''
    const buf = Buffer.alloc(65536)
    for (let i = 0; i < 300 && !seen.includes('listening'); i++) {
      try {
        const n = readSync(reader, buf)
        seen += buf.subarray(0, n).toString()
      } catch {
        await sleep(50) // EAGAIN: nothing written yet
      }
    }
    expect(seen).toContain('listening')
    closeSync(reader) // the reader is gone: every later write to stderr is EPIPE
    await sleep(100)
    proc.kill('SIGTERM')
    const result = await Promise.race([exited, sleep(12_000).then(() => 'hung' as const)])
    if (result === 'hung') proc.kill('SIGKILL')
    expect(result).toBe(0)
  }, 30_000)
})

describe('token in config', () => {
  it('a valid token lets calls through', async () => {
    const host = await spawnHost({ env: { KINDGI_PACK_SERVICE_TOKEN: `  ${TOKEN}  ` } })
    try {
      expect((await request(host, '/v1/info')).status).toBe(200)
    } finally {
      await host.stop()
    }
  })
})
