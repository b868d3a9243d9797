// Strict calls in processes of their own (issue 16), seen from outside: the front starts
// them through its spawner, none of them holds the token, and a spawner that dies ends only
// the calls it was running; the service goes on and starts a new one.
import { existsSync, readdirSync, readFileSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { dirname, join } from 'node:path'
import { describe, expect, it } from 'vitest'
import { type Host, invoke, invokeThenLeave, sharedHost, sleep, spawnHost, TOKEN, within } from '../helpers/host.js'
import { writeHoistedPack, writeScratchPack } from '../helpers/scratch-pack.js'
import { tempDirs } from '../helpers/temp-dir.js'
import { cmdline, parentOf, processTree } from '../walls/walls-helpers.js'

// Before sharedHost: its folders are removed after the host using them has stopped.
const tempDir = tempDirs()
const host = sharedHost({ env: { KINDGI_PACK_SANDBOX: 'strict' } })

function children(pid: number): number[] {
  return processTree(pid).filter((p) => p !== pid && parentOf(p) === pid)
}

/** Whether the call of `runId` has logged `message` through ctx.log. */
function logged(on: Host, runId: string, message: string): boolean {
  return on.lines.some((l) => l.kind === 'log' && l.runId === runId && l.message === message)
}

function spawnerOf(front: number): number {
  const spawner = children(front).find((p) => cmdline(p).includes('spawner-process.js'))
  expect(spawner, `the front's children: ${children(front).map(cmdline).join(' | ')}`).toBeDefined()
  return spawner as number
}

describe('strict calls run in processes the front starts through its spawner', () => {
  it("the front's only child is the spawner, and every strict process is the spawner's", async () => {
    expect((await invoke(host, 'echo', { a: 1 })).body).toMatchObject({ kind: 'result' })
    const front = host.proc.pid as number
    const spawner = spawnerOf(front)
    expect(children(front)).toEqual([spawner])
    // A call's process is killed as its answer goes: one still being torn down shows no command line.
    const strict = children(spawner)
      .map(cmdline)
      .filter((line) => line !== '')
    expect(strict.length).toBeGreaterThan(0)
    for (const line of strict) expect(line).toContain('--kindgi-pack-process')
  })

  it('neither the spawner nor a strict process has the token in its environment or arguments', () => {
    const spawner = spawnerOf(host.proc.pid as number)
    const strict = children(spawner)
    let read = 0
    for (const pid of [spawner, ...strict]) {
      let environ: string
      try {
        environ = readFileSync(`/proc/${pid}/environ`, 'latin1')
      } catch (err) {
        // The process of a call that answered just now, killed between the listing and the read.
        if ((err as NodeJS.ErrnoException).code === 'ESRCH' || (err as NodeJS.ErrnoException).code === 'ENOENT') continue
        throw err
      }
      read++
      expect(environ).not.toContain(TOKEN)
      expect(cmdline(pid)).not.toContain(TOKEN)
    }
    // The spawner, and a spare waiting for the next call: there are always strict processes to look at.
    expect(read).toBeGreaterThanOrEqual(2)
  })
})

describe("a strict call's folder", () => {
  it('is gone once its call is, whether the call left it empty or not; the only folders left are those of waiting spares', async () => {
    const [root] = readdirSync(tmpdir()).filter((name) => name.startsWith(`kindgi-pack-host-${host.proc.pid}-`))
    expect(root).toBeDefined()
    for (let i = 0; i < 3; i++) expect((await invoke(host, 'echo', { i })).status).toBe(200)
    const probe = await invoke(host, 'strict-probe', { outside: join(tmpdir(), 'kph-never-written.txt') })
    expect(probe.body.output.writes.inside).toBe('written')
    // Removed as its process has gone, off the spawner's event loop: soon, not at a set time.
    expect(await within(5_000, () => !existsSync(probe.body.output.tmpDir)), 'its folder is gone').toBe(true)
    // A spare's folder is made before it starts (by the spawner), granted to it alone, in its
    // environment (NODE_OPTIONS): a command line is readable to every process of the user.
    const nodeOptions = (pid: number) => {
      try {
        return readFileSync(`/proc/${pid}/environ`, 'utf8')
          .split('\0')
          .find((line) => line.startsWith('NODE_OPTIONS='))
      } catch {
        return undefined // gone meanwhile
      }
    }
    const look = () => {
      // The one folder the root holds for itself (call-tmp.ts: so that it is never empty) aside.
      const left = readdirSync(join(tmpdir(), root as string))
        .filter((name) => !name.startsWith('.held-'))
        .map((name) => `--allow-fs-write=${join(tmpdir(), root as string, name)}`)
      const spares = children(spawnerOf(host.proc.pid as number))
      const granted = spares.flatMap((pid) =>
        [...(nodeOptions(pid) ?? '').matchAll(/"(--allow-fs-write=[^"]*)"/g)].map((m) => m[1]).filter((arg) => !arg?.endsWith('/*')),
      )
      return { left, spares, granted }
    }
    // A spare being started has its folder a moment before its process can be read: look until both are there.
    await within(5_000, () => {
      const { left, granted } = look()
      return left.length > 0 && left.every((folder) => granted.includes(folder))
    })
    const { left, spares, granted } = look()
    for (const pid of spares) expect(cmdline(pid), 'a spare names no call folder on its command line').not.toContain(root)
    expect(left.length).toBeGreaterThan(0)
    for (const folder of left) expect(granted).toContain(folder)
  })
})

describe("a strict call's temporary folder", () => {
  it('is os.tmpdir() too: a library that writes its temporary files there works', async () => {
    // Before stop 40 os.tmpdir() was /tmp, which a strict call may not write: ERR_ACCESS_DENIED.
    const root = tempDir('tmpdir-')
    const code =
      "import { mkdtempSync, writeFileSync } from 'node:fs'\nimport { tmpdir } from 'node:os'\nimport { dirname, join } from 'node:path'\nexport default (input, ctx) => { const dir = mkdtempSync(join(tmpdir(), 'lib-')); writeFileSync(join(dir, 'f'), 'x'); return { same: tmpdir() === ctx.tmpDir, under: dir.startsWith(ctx.tmpDir) } }\n"
    writeScratchPack(root, 'tmpdir', { temp: { code } })
    const own = await spawnHost({
      args: ['--index', join(root, 'index.json'), '--module-root', root, '--host', '127.0.0.1'],
      env: { KINDGI_PACK_SANDBOX: 'strict' },
    })
    try {
      expect((await invoke(own, 'temp', {})).body).toEqual({ v: 2, kind: 'result', output: { same: true, under: true } })
    } finally {
      await own.stop()
    }
  })
})

describe("a strict call's abortSignal", () => {
  // A strict process reads nothing while its call runs until the front rings it (DOORBELL).
  it('fires in its process when the call passes its deadline, which is answered at once', async () => {
    // A deadline long enough for the handler to have started on a loaded machine; answered
    // well before the 10-s sleep would have ended.
    const started = Date.now()
    const res = await invoke(
      host,
      'sleep',
      { ms: 10_000, logAbort: true },
      { 'kindgi-timeout-ms': '1500' },
      { ctx: { tenantId: 't', runId: 'strict-deadline' } },
    )
    expect(res.body).toEqual({ v: 2, kind: 'error', code: 'deadline-exceeded', message: 'sleep passed its deadline', toolId: 'sleep' })
    expect(Date.now() - started).toBeLessThan(5_000)
    expect(await host.waitFor('log', (l) => l.runId === 'strict-deadline', 5000)).toMatchObject({ message: 'aborted', reason: 'deadline exceeded' })
    // The handler does not settle when aborted: its process is killed after the grace, for its deadline.
    await host.waitFor('worker-replaced', (l) => l.id === 'sleep@1.0.0' && l.reason === 'deadline')
  })

  it('fires in its process when its caller goes away, and the call line says cancelled', async () => {
    const message = {
      v: 2,
      kind: 'invoke',
      tool: { id: 'sleep' },
      input: { ms: 10_000, logStart: true, logAbort: true },
      ctx: { tenantId: 't', runId: 'strict-cancel' },
    }
    await invokeThenLeave(host, message, () => logged(host, 'strict-cancel', 'started'))
    expect(await host.waitFor('call', (l) => l.runId === 'strict-cancel')).toMatchObject({ id: 'sleep', outcome: 'cancelled' })
    expect(await host.waitFor('log', (l) => l.runId === 'strict-cancel' && l.message === 'aborted', 5000)).toMatchObject({ reason: 'caller went away' })
  })
})

describe("a strict process's doorbell rung by someone else", () => {
  // Pack code can signal a pid it guesses (docs/security.md): SIGUSR2 to every strict process,
  // spares waiting and the one running a call, must neither end them nor change any answer.
  it('changes nothing: the running call and the next ones answer as before', async () => {
    expect((await invoke(host, 'echo', { warm: true })).status).toBe(200)
    await sleep(300) // spares started and waiting
    const running = invoke(host, 'sleep', { ms: 600 }, {}, { ctx: { tenantId: 't', runId: 'rung' } })
    await sleep(200)
    const strict = children(spawnerOf(host.proc.pid as number))
    expect(strict.length).toBeGreaterThan(1)
    for (const pid of strict) process.kill(pid, 'SIGUSR2')
    expect((await running).body).toEqual({ v: 2, kind: 'result', output: { slept: 600 } })
    for (let i = 0; i < 3; i++) expect((await invoke(host, 'echo', { i })).body).toEqual({ v: 2, kind: 'result', output: { i } })
    expect(host.lines.filter((l) => l.kind === 'worker-replaced' && l.reason === 'crash')).toEqual([])
  })
})

describe('as many callers as the cap, each sending its next call the moment its answer comes (a balancer)', () => {
  it('are never refused: a strict call frees its slot as it is answered, its process already killed', async () => {
    const capped = await spawnHost({ env: { KINDGI_PACK_SANDBOX: 'strict', KINDGI_PACK_SERVICE_MAX_CONCURRENCY: '2' } })
    try {
      const callers = [0, 1].map(async (caller) => {
        const statuses: number[] = []
        for (let i = 0; i < 25; i++) statuses.push((await invoke(capped, 'echo', { caller, i })).status)
        return statuses
      })
      const statuses = (await Promise.all(callers)).flat()
      expect(statuses).toHaveLength(50)
      expect(statuses.filter((status) => status !== 200)).toEqual([])
    } finally {
      await capped.stop()
    }
  })
})

describe("one tenant's burst of long strict calls waiting for the cores", () => {
  it("delays another tenant's call by about one call, not by the burst", async () => {
    // One core in the budget: six calls of tenant a that compute 1 s each, then tenant b's echo.
    const one = await spawnHost({ env: { KINDGI_PACK_SANDBOX: 'strict', KINDGI_PACK_WORKER_THREADS: '1' } })
    try {
      const burst = Array.from({ length: 6 }, (_, i) => invoke(one, 'burn', { ms: 1000 }, {}, { ctx: { tenantId: 'tenant-a', runId: `burst-${i}` } }))
      await sleep(200)
      const started = Date.now()
      const victim = await invoke(one, 'echo', { b: 1 }, {}, { ctx: { tenantId: 'tenant-b', runId: 'victim' } })
      const took = Date.now() - started
      console.log(`a burst of six 1-s strict calls: tenant b's echo answered in ${took} ms`)
      expect(victim.body).toEqual({ v: 2, kind: 'result', output: { b: 1 } })
      // Behind the whole burst in one line it waits for all six (≥ 5 s; 3.5 s with calls of 600 ms
      // on the build before stop 30); now the call running ends (at most 1 s), then b's starts.
      expect(took, "ms until tenant b's answer").toBeLessThan(3_000)
      for (const answer of await Promise.all(burst)) expect(answer.body).toEqual({ v: 2, kind: 'result', output: { burnedMs: 1000 } })
    } finally {
      await one.stop()
    }
  }, 20_000)
})

describe('a strict call whose process exits', () => {
  it('answers handler-throw with how its process ended (its exit code)', async () => {
    const answer = await invoke(host, 'exit', {})
    expect(answer.body).toMatchObject({ v: 2, kind: 'error', code: 'handler-throw', toolId: 'exit' })
    expect(answer.body.message).toContain('the worker running it exited (code 3)')
  })
})

describe('a spawner that dies', () => {
  it('ends the strict calls it was running as exited; the next call gets a new spawner and its answer', async () => {
    const running = invoke(host, 'sleep', { ms: 5000, logStart: true }, {}, { ctx: { tenantId: 't', runId: 'spawner-dies' } })
    expect(await within(5_000, () => logged(host, 'spawner-dies', 'started')), 'the call started in its process').toBe(true)
    process.kill(spawnerOf(host.proc.pid as number), 'SIGKILL')
    const answer = await running
    expect(answer.body).toMatchObject({ kind: 'error', code: 'handler-throw', toolId: 'sleep' })
    expect(answer.body.message).toContain('exited')
    expect((await invoke(host, 'echo', { after: 'spawner died' })).body).toMatchObject({ kind: 'result' })
    expect(spawnerOf(host.proc.pid as number)).toBeGreaterThan(0)
  })
})

describe('a strict pack kept in a folder of a larger project', () => {
  it('loads its tools with the package.json above its module root, which the module loader reads for their type; pack code reads neither it nor what lies beside it', async () => {
    // Before stop 39 the kernel's read wall refused that file: "Cannot read package config … permission denied", every strict tool.
    const project = tempDir('monorepo-')
    writeFileSync(join(project, 'package.json'), JSON.stringify({ name: 'monorepo', private: true, type: 'module' }))
    writeFileSync(join(project, 'secret.txt'), 'not for packs')
    const root = join(project, 'packs', 'p')
    const read =
      "import { readFileSync } from 'node:fs'\nexport default (input) => { try { return { text: readFileSync(input.file, 'utf8') } } catch (err) { return { denied: err.code } } }\n"
    writeScratchPack(root, 'nested', { read: { code: read } })
    const nested = await spawnHost({
      args: ['--index', join(root, 'index.json'), '--module-root', root, '--host', '127.0.0.1'],
      env: { KINDGI_PACK_SANDBOX: 'strict' },
    })
    try {
      for (const file of ['package.json', 'secret.txt']) {
        const answer = await invoke(nested, 'read', { file: join(project, file) })
        expect(answer.body, file).toMatchObject({ kind: 'result', output: { denied: expect.any(String) } })
      }
    } finally {
      await nested.stop()
    }
  })
  /** The problems of the boot-failed line of a strict service of the scratch pack at `root`. */
  async function strictBootProblems(root: string): Promise<unknown> {
    const failed = await spawnHost({
      args: ['--index', join(root, 'index.json'), '--module-root', root, '--host', '127.0.0.1'],
      env: { KINDGI_PACK_SANDBOX: 'strict' },
      waitListening: false,
    })
    try {
      return (await failed.waitFor('boot-failed')).problems
    } finally {
      await failed.stop()
    }
  }

  it('fails its boot naming the file it may not read, and what to do, when its packages are hoisted to a node_modules above it', async () => {
    // Before stop 40 the line said only Node's "Access to this API has been restricted. Use --allow-fs-read to manage permissions."
    const project = tempDir('hoisted-')
    const index = writeHoistedPack(project)
    expect(await strictBootProblems(dirname(index))).toEqual([
      `Module tools/uses.js threw while loading: its sandbox may not read ${join(project, 'node_modules', 'hoisted-dep', 'package.json')}, outside the pack's module root: put the packages it imports in a node_modules inside the pack (not one a monorepo hoisted above it), or bundle them into the pack`,
    ])
  })
  it("fails its boot naming memMB when a tool's module cannot load within it, and which module", async () => {
    // Before stop 40 the line said only "A strict process exited while loading its modules".
    const root = tempDir('small-mem-')
    const code = 'const kept = []\nfor (let i = 0; i < 5_000_000; i++) kept.push({ i })\nexport default () => ({ kept: kept.length })\n'
    writeScratchPack(root, 'small-mem', { big: { code, limits: { memMB: 16 } } })
    expect(await strictBootProblems(root)).toEqual([
      expect.stringMatching(
        /^A strict process ran out of memory \(\w+\) loading tools\/big\.js: memMB 16 is its heap limit, too small to load them; raise the tool's limits\.memMB$/,
      ),
    ])
  })
})
