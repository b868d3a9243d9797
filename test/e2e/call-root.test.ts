// The root of strict calls' folders (src/pool/call-tmp.ts) leaves with the service, also when it
// exits without closing its pool: a service that cannot listen, or one stopped while its pack
// loads, left one behind in the temporary folder at each start. And with what a dead spawner
// left in it: removing that must hold the service up until it is done. A service whose temporary
// folder cannot be written (a read-only root filesystem) needs none without a strict tool, and
// with one says so in a boot-failed line: it died of an internal error before.
import { existsSync, mkdtempSync, readdirSync, rmSync } from 'node:fs'
import { createServer } from 'node:net'
import type { AddressInfo } from 'node:net'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { afterAll, describe, expect, it } from 'vitest'
import { processTree } from '../../bench/process-tree.js'
import { FIXTURES, invoke, settled, spawnerOf, spawnHost, within } from '../helpers/host.js'

// The service's temporary folder (TMPDIR): its own, so that what is left in it is the service's.
const tmp = mkdtempSync(join(tmpdir(), 'kph-call-root-'))
afterAll(() => rmSync(tmp, { recursive: true, force: true }))

/** The call roots left in `dir`, once nothing has changed there for half a second (the spawner may still be ending). */
async function rootsLeft(dir: string): Promise<string[]> {
  const roots = () => readdirSync(dir).filter((name) => name.startsWith('kindgi-pack-host-'))
  await settled(() => roots().join('\n'), 500, 5_000)
  return roots()
}

describe('a service that cannot listen', () => {
  it('exits 1 and leaves no folder of its strict calls behind', async () => {
    const dir = mkdtempSync(join(tmp, 'listen-'))
    const blocker = createServer()
    await new Promise<void>((resolve) => blocker.listen(0, '127.0.0.1', resolve))
    try {
      // Strict: spares, each with its folder in the root, are started while the pack loads.
      const port = String((blocker.address() as AddressInfo).port)
      const host = await spawnHost({ waitListening: false, env: { PORT: port, TMPDIR: dir, KINDGI_PACK_SANDBOX: 'strict' } })
      expect(await host.exited).toBe(1)
      expect(host.lines.find((l) => l.kind === 'boot-failed')).toBeDefined()
      expect(await rootsLeft(dir)).toEqual([])
    } finally {
      blocker.close()
    }
  })
})

describe('a service stopped while its pack loads', () => {
  it('exits at once and leaves no folder of its strict calls behind', async () => {
    const dir = mkdtempSync(join(tmp, 'boot-'))
    // Strict, so that it has a root: made as the pool starts, before the pack's modules load (700 ms for this one).
    const host = await spawnHost({ waitListening: false, index: `${FIXTURES}/slow-load-pack/index.json`, env: { TMPDIR: dir, KINDGI_PACK_SANDBOX: 'strict' } })
    expect(await within(10_000, () => readdirSync(dir).length > 0)).toBe(true)
    host.proc.kill('SIGTERM')
    expect(await host.exited).toBe(0)
    expect(host.lines.some((l) => l.kind === 'listening')).toBe(false)
    expect(await rootsLeft(dir)).toEqual([])
  })
})

describe('a service stopped after its spawner died', () => {
  it("removes the folders of the dead spawner's processes with the root, writes stopped and exits 0", async () => {
    const dir = mkdtempSync(join(tmp, 'spawner-'))
    const host = await spawnHost({ env: { TMPDIR: dir, KINDGI_PACK_SANDBOX: 'strict' } })
    expect((await invoke(host, 'echo', { a: 1 })).body).toMatchObject({ kind: 'result' })
    const front = host.proc.pid as number
    const spawner = spawnerOf(host)
    expect(spawner, 'the spawner').toBeDefined()
    // Killed outright, it leaves its spares' folders in the root: nothing of it removes them.
    process.kill(spawner as number, 'SIGKILL')
    expect(await within(5_000, () => !processTree(front).includes(spawner as number))).toBe(true)
    expect(await host.stop()).toBe(0)
    expect(host.lines.some((l) => l.kind === 'stopped')).toBe(true)
    expect(await rootsLeft(dir)).toEqual([])
  })
})

describe('a service killed outright', () => {
  it('leaves no folder of its strict calls behind: its spawner removes them once it has ended their processes', async () => {
    const dir = mkdtempSync(join(tmp, 'killed-'))
    const host = await spawnHost({ env: { TMPDIR: dir, KINDGI_PACK_SANDBOX: 'strict' } })
    expect((await invoke(host, 'echo', { a: 1 })).body).toMatchObject({ kind: 'result' })
    const spawner = spawnerOf(host) as number
    expect(spawner, 'the spawner').toBeDefined()
    // A call running as the front dies: its process, and its folder with the spares', must go too.
    const running = invoke(host, 'sleep', { ms: 10_000, logStart: true }, {}, { ctx: { tenantId: 't', runId: 'killed' } }).catch(() => undefined)
    expect(await within(10_000, () => host.lines.some((l) => l.kind === 'log' && l.runId === 'killed' && l.message === 'started'))).toBe(true)
    // SIGKILL: no exit hook of the front runs, and nothing of it removes the root.
    host.proc.kill('SIGKILL')
    await host.exited
    await running
    expect(await within(10_000, () => !existsSync(`/proc/${spawner}`))).toBe(true)
    expect(await rootsLeft(dir)).toEqual([])
  })
})

describe('a service whose temporary folder cannot be written', () => {
  // A path under a file: no one makes a folder there, root included.
  const unwritable = { TMPDIR: '/dev/null/tmp' }

  it('serves a pack with no strict tool: it makes no folder for strict calls', async () => {
    const host = await spawnHost({ index: `${FIXTURES}/slow-load-pack/index.json`, env: unwritable })
    try {
      expect((await invoke(host, 'slow', {})).body).toMatchObject({ kind: 'result', output: { loaded: true } })
    } finally {
      await host.stop()
    }
  })

  it('with a strict tool, exits 1 with one boot-failed line naming the folder and the fix', async () => {
    const host = await spawnHost({ waitListening: false, env: { ...unwritable, KINDGI_PACK_SANDBOX: 'strict' } })
    expect(await host.exited).toBe(1)
    const failed = host.lines.filter((l) => l.kind === 'boot-failed')
    expect(failed).toHaveLength(1)
    expect(((failed[0]?.problems ?? []) as string[]).join('\n')).toMatch(
      /ctx\.tmpDir in \/dev\/null\/tmp: ENOTDIR.*set TMPDIR to one, or mount a writable \/tmp/,
    )
    expect(host.lines.filter((l) => l.kind === 'internal-error')).toEqual([])
  })
})
