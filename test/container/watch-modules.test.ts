// --watch in the image (issue 18): the README's docker run flags, the image's own command plus
// --watch (what docker compose runs), a copy of examples/hello-pack bind-mounted read-only at
// /app/pack and saved on this machine. Under the image's strict posture the container sees a
// save of a TypeScript module and serves its new code; a broken save keeps the old pack; ten
// saves in 200 ms are one reload.
import { chmodSync, chownSync, cpSync, mkdtempSync, readdirSync, readFileSync, renameSync, rmSync, statSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest'
import { readDockerfile } from '../helpers/dockerfile.js'
import { docker, dockerOk, freePort, http, IMAGE, invokeBody, logLines, ROOT, sleep, until, type JsonLine } from './engine.js'
import { readmeRunArgs, readmeTokenMode } from './readme-run.js'

const engine = inject('engine')
const TOKEN = 'container-watch-token'
const TOKEN_GID = process.getuid?.() === 0 ? 4242 : (process.getgid?.() ?? 0)
const NAME = `kph-ct-watch-${process.pid}`

const work = mkdtempSync(join(tmpdir(), 'kph-container-watch-'))
chmodSync(work, 0o755)
const pack = join(work, 'pack')
const tool = join(pack, 'tools/greet.ts')
let port = 0
let id = ''

/** Readable by the container's user (10001), as a checkout usually is. */
function readable(path: string): void {
  const dir = statSync(path).isDirectory()
  chmodSync(path, dir ? 0o755 : 0o644)
  if (dir) for (const name of readdirSync(path)) readable(join(path, name))
}

/** An editor's save on this machine: the new bytes to a temporary file, renamed over the old one. */
function save(path: string, text: string): void {
  writeFileSync(`${path}~`, text)
  chmodSync(`${path}~`, 0o644)
  renameSync(`${path}~`, path)
}

const original = () => readFileSync(join(ROOT, 'examples/hello-pack/tools/greet.ts'), 'utf8')
const greeting = (text: string) => original().replace('`${input.greeting}, ${input.name}!`', text)
const greet = async (name: string) =>
  (
    await http(`http://127.0.0.1:${port}/v1/invoke`, {
      method: 'POST',
      headers: { 'kindgi-pack-token': TOKEN, 'content-type': 'application/json' },
      body: invokeBody('hello.greet', { name }, name),
    })
  ).body
const lines = async (kind: string): Promise<JsonLine[]> => (await logLines(id)).filter((l) => l.kind === kind)

beforeAll(async () => {
  if (engine.skip !== undefined) return
  cpSync(join(ROOT, 'examples/hello-pack'), pack, { recursive: true })
  readable(pack)
  const token = join(work, 'token')
  writeFileSync(token, `${TOKEN}\n`)
  chmodSync(token, readmeTokenMode())
  chownSync(token, process.getuid?.() ?? 0, TOKEN_GID)
  port = await freePort()
  const args = readmeRunArgs({ hostPort: port, tokenFile: token, packDir: pack, tokenGid: TOKEN_GID, image: IMAGE })
  const image = args.pop() as string
  const command = readDockerfile(join(ROOT, 'docker/Dockerfile')).exec('CMD') as string[]
  id = (await dockerOk([...args, '--name', NAME, image, ...command, '--watch'], { timeoutMs: 60_000 })).trim()
  await until('/readyz 200', async () => ((await http(`http://127.0.0.1:${port}/readyz`, { timeoutMs: 1_000 })).status === 200 ? true : undefined), 30_000, 50)
})

afterAll(async () => {
  if (id !== '') await docker(['rm', '-f', id], { timeoutMs: 60_000 })
  rmSync(work, { recursive: true, force: true })
})

describe.skipIf(engine.skip !== undefined)('--watch in the image, the pack bind-mounted read-only', () => {
  it('runs strict, with /app/pack mounted read-only', async () => {
    const mounts = JSON.parse(await dockerOk(['inspect', '--format', '{{json .Mounts}}', id])) as Array<{ Destination: string; RW: boolean }>
    expect(mounts.find((m) => m.Destination === '/app/pack')).toMatchObject({ RW: false })
    expect((await dockerOk(['exec', id, 'printenv', 'KINDGI_PACK_SANDBOX'])).trim()).toBe('strict')
    expect(await greet('Ana')).toEqual({ v: 2, kind: 'result', output: { greeting: 'Hello, Ana!' } })
  })

  it('a save of a TypeScript module on this machine is reloaded in the container and its new code served', async () => {
    const saved = Date.now()
    save(tool, greeting('`${input.greeting}, ${input.name}, from the container!`'))
    const reloaded = await until('a reloaded line', async () => (await lines('reloaded'))[0], 20_000, 100)
    expect(reloaded).toMatchObject({ packId: 'hello', changed: ['tools/greet.ts'] })
    console.log(`container tests: --watch, save to reloaded in the container: ${Date.parse(reloaded.time as string) - saved} ms`)
    expect(await greet('Bo')).toEqual({ v: 2, kind: 'result', output: { greeting: 'Hello, Bo, from the container!' } })
  })

  it('a broken save is one boot-failed line with reload: true, and the old pack keeps serving', async () => {
    save(tool, greeting('`${input.greeting}, ${input.name}` +'))
    const failed = await until('a boot-failed line', async () => (await lines('boot-failed'))[0], 20_000, 100)
    expect(failed).toMatchObject({ reload: true, problems: [expect.stringContaining('tools/greet.ts')] })
    expect(await greet('Cy')).toEqual({ v: 2, kind: 'result', output: { greeting: 'Hello, Cy, from the container!' } })
    expect((await dockerOk(['inspect', '--format', '{{.State.Running}}', id])).trim()).toBe('true')
  })

  it('ten saves in 200 ms are one reload, of the last save', async () => {
    const before = (await lines('reloaded')).length
    const pause = new Int32Array(new SharedArrayBuffer(4))
    for (let i = 1; i <= 10; i++) {
      save(tool, greeting(`\`\${input.greeting}, \${input.name} (save ${i})\``))
      if (i < 10) Atomics.wait(pause, 0, 0, 20)
    }
    await until('a reloaded line', async () => ((await lines('reloaded')).length > before ? true : undefined), 20_000, 100)
    // Past the debounce, a stat poll and a boot: a second reload would have been logged by now.
    await sleep(2_500)
    expect((await lines('reloaded')).length - before).toBe(1)
    expect(await greet('Di')).toEqual({ v: 2, kind: 'result', output: { greeting: 'Hello, Di (save 10)' } })
  })
})
