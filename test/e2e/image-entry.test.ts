// The production image's entry, run without a Docker engine: the Dockerfile's command and
// environment, read from the Dockerfile itself, on a copy of the image's /app layout (the pack
// at /app/pack, /app/index.json linking into it, the token in a secret file), on loopback.
import { spawnSync } from 'node:child_process'
import { cpSync, mkdirSync, symlinkSync, writeFileSync } from 'node:fs'
import { createServer } from 'node:net'
import { dirname, join } from 'node:path'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { readDockerfile } from '../helpers/dockerfile.js'
import { BIN, request, ROOT, spawnHost, type Host } from '../helpers/host.js'
import { tempDirs } from '../helpers/temp-dir.js'

const dockerfile = readDockerfile(join(ROOT, 'docker/Dockerfile'))
const IMAGE_TOKEN = 'image-token-from-a-secret-file'

/** Where the image's absolute paths land in this test's copy of the layout; removed after the afterAll below has stopped the host. */
const tempDir = tempDirs()
const root = tempDir('kph-image-')
const MOUNTS: Array<[string, string]> = [
  ['/app', join(root, 'app')],
  ['/run/secrets', join(root, 'secrets')],
  ['/tmp', join(root, 'tmpfs')],
]
function here(path: string): string {
  for (const [inImage, local] of MOUNTS) if (path === inImage || path.startsWith(`${inImage}/`)) return local + path.slice(inImage.length)
  return path
}

let host: Host
let metricsUrl: string

beforeAll(async () => {
  // The layout the Dockerfile builds and the run flags mount.
  cpSync(join(ROOT, 'examples/hello-pack'), here('/app/pack'), { recursive: true })
  const link = /ln -s (\S+) (\S+)/.exec(
    dockerfile
      .all('RUN')
      .map((r) => r.args)
      .join('\n'),
  )
  expect(link).not.toBeNull()
  symlinkSync(link![1]!, here(link![2]!))
  mkdirSync(here(dockerfile.env.TMPDIR!), { recursive: true })
  const tokenFile = here(dockerfile.env.KINDGI_PACK_SERVICE_TOKEN_FILE!)
  mkdirSync(dirname(tokenFile), { recursive: true })
  writeFileSync(tokenFile, `${IMAGE_TOKEN}\n`)

  const [node, ...rest] = dockerfile.exec('CMD') as string[]
  const flags = rest.filter((a, i) => a.startsWith('--') && rest.slice(0, i).every((b) => b.startsWith('--')))
  const [main, ...args] = rest.slice(flags.length)
  expect([node, join(ROOT, main!)]).toEqual(['node', BIN])
  const env: Record<string, string | undefined> = { KINDGI_PACK_SERVICE_TOKEN: undefined }
  for (const [name, value] of Object.entries(dockerfile.env)) env[name] = here(value)
  // Loopback and free ports on this shared machine, where the image would use 0.0.0.0:8080.
  Object.assign(env, { PORT: '0', KINDGI_PACK_METRICS_PORT: '0' })
  host = await spawnHost({ command: [process.execPath, ...flags, BIN], args: [...args.map(here), '--host', '127.0.0.1'], env })
  metricsUrl = `http://127.0.0.1:${host.lines.find((l) => l.kind === 'listening')!.metricsPort}`
})

afterAll(async () => {
  await host?.stop()
})

describe('the image command with the image environment', () => {
  it('serves the pack at /app/pack through /app/index.json, with the token from the secret file', async () => {
    expect((await request(host, '/readyz', { token: null })).status).toBe(200)
    expect((await request(host, '/v1/info')).status).toBe(401)
    const info = await request(host, '/v1/info', { token: IMAGE_TOKEN })
    expect(info.body).toMatchObject({ packId: 'hello', missingEnv: [] })
    const call = { v: 2, kind: 'invoke', tool: { id: 'hello.greet' }, input: { name: 'Ana' }, ctx: { tenantId: 't', runId: 'r' } }
    const answer = await request(host, '/v1/invoke', {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify(call),
      token: IMAGE_TOKEN,
    })
    expect(answer.body).toEqual({ v: 2, kind: 'result', output: { greeting: 'Hello, Ana!' } })
  })

  it('runs every tool in the strict posture', async () => {
    const text = await (await fetch(`${metricsUrl}/metrics`)).text()
    const workers = (posture: string) => Number(new RegExp(`^kindgi_pack_workers\\{posture="${posture}"\\} (\\d+)$`, 'm').exec(text)?.[1])
    expect(workers('strict')).toBeGreaterThan(0)
    expect(workers('none')).toBe(0)
    expect(workers('context-isolated')).toBe(0)
    // /proc is closed to the served process under strict: the RSS gauge must not read it.
    expect(Number(/^kindgi_pack_resident_memory_bytes (\d+)$/m.exec(text)?.[1])).toBeGreaterThan(0)
  })
})

describe('the image HEALTHCHECK command', () => {
  const check = dockerfile.exec('HEALTHCHECK') as string[]
  const run = (port: number) => spawnSync(process.execPath, check.slice(1), { cwd: ROOT, env: { PATH: process.env.PATH, PORT: String(port) }, timeout: 10_000 })

  it('exits 0 against the running host', () => {
    expect(check[0]).toBe('node')
    expect(run(host.port).status).toBe(0)
  })

  it('exits 1 when nothing answers on the port', async () => {
    const closed = await new Promise<number>((resolve) => {
      const server = createServer().listen(0, '127.0.0.1', () => {
        const { port } = server.address() as { port: number }
        server.close(() => resolve(port))
      })
    })
    expect(run(closed).status).toBe(1)
  })
})

describe('SIGTERM, as docker stop sends it', () => {
  it('drains and exits 0', async () => {
    expect(await host.stop('SIGTERM')).toBe(0)
    expect(host.lines.map((l) => l.kind)).toEqual(expect.arrayContaining(['draining', 'stopped']))
  })
})
