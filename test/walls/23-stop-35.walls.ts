// Stop 35: a red-team pass on the strict posture (hostile tools in test/fixtures/walls-pack/:
// deep-tree, files-name, pool-threads, pool-burn). What each crossed before its wall:
//
// 1. deep-tree: a strict call left its files in TMPDIR for good. A read-only folder with a file,
//    ~7,300 characters deep though no path the call named was longer than PATH_MAX (a chain of
//    folders renamed to the bottom of another): the spawner's rmSync was refused in the
//    read-only folder (no CAP_DAC_OVERRIDE, as the image's user), and its walk, by absolute
//    paths, met ENAMETOOLONG. Now the walk moves deep folders up before it walks them.
// 2. files-dotdot: ctx.files.read("..") (or ".") sent the call's file token to the store URL's
//    parent (or the store URL itself): "." and ".." survive encodeURIComponent and the URL
//    parser resolves them. The front now refuses them, as the pack process's own code does first.
// 3. pool-threads: pack code set UV_THREADPOOL_SIZE before libuv's pool first started, which in
//    a strict process was pack code's to do: 1,030 threads in one call's process, the
//    container's pids gone, other tenants' strict calls past their deadline. The pool now starts
//    before the call.
// 4. pool-burn: a cpuMs 1000 strict call burning CPU on libuv's pool was read first at 1 s of
//    wall time, by when it had used 1,430 ms and more. Its CPU time is now read from the start.
// 5. native-spin: a warm cpuMs 200 call in crypto.pbkdf2Sync, which Worker.terminate() cannot
//    interrupt, answered deadline-exceeded at once, but its worker burnt a core and the call held
//    its slot of the service's cap until the native call returned (minutes, at will). Now its
//    pack process is ended when the call is not freed within a grace after such an answer.
// 6. forge-result with a body: a strict tool wrote its own answer on fd 3, and the front sent it on
//    as it came: a pause from a tool without pauses: true, an error body logged as ok, a body
//    that was no JSON. Now the front checks the head its own code writes (src/pool/answer-head.ts).
import { existsSync, readFileSync } from 'node:fs'
import { describe, expect, it } from 'vitest'
import { cpuTimeMs } from '../../src/pool/proc-stat.js'
import { type Host, sleep, within } from '../helpers/host.js'
import { fileStoreOn, NO_CAPABILITIES, packProcesses, rawInvoke, STRICT, stillServes, withHost, wallsPackWith } from './walls-helpers.js'

function threadsOf(pid: number): number {
  try {
    return Number(/^Threads:\s+(\d+)$/m.exec(readFileSync(`/proc/${pid}/status`, 'latin1'))?.[1] ?? 0)
  } catch {
    return 0
  }
}

/** Reads `measure` of every pack process every `everyMs` until `during` settles; the highest seen. */
async function highest<T>(host: Host, measure: (pid: number) => number, everyMs: number, during: Promise<T>): Promise<{ result: T; most: number }> {
  let most = 0
  let done = false
  const result = during.finally(() => {
    done = true
  })
  while (!done) {
    for (const pid of packProcesses(host)) most = Math.max(most, measure(pid))
    await sleep(everyMs)
  }
  return { result: await result, most }
}

describe('stop 35: a red-team pass on the strict posture', () => {
  it('deep-tree: a read-only folder deeper than a path may be long leaves nothing of its call behind', async () => {
    await withHost({ ...wallsPackWith(['deep-tree', 'echo']), env: STRICT, command: NO_CAPABILITIES }, async (host) => {
      const attack = await rawInvoke(host.port, 'deep-tree', { bytes: 1024 * 1024 }, { tenantId: 'tenant-a', runId: 'attack' })
      const tmpDir = 'error' in attack ? undefined : (attack.body?.output?.tmpDir as string | undefined)
      expect(tmpDir, `the attack answered its folder: ${JSON.stringify(attack).slice(0, 300)}`).toBeTypeOf('string')
      // Removed after the call, at the machine's pace; before the wall it stayed for good.
      await within(5000, () => !existsSync(tmpDir as string))
      expect(existsSync(tmpDir as string), "the attack's folder after its call").toBe(false)
      await stillServes(host)
    })
  })

  it.each([
    ['strict', { op: 'read', raw: true }],
    ['none', { op: 'read', raw: false }],
  ])('files-dotdot (%s, %o): "." and ".." as artifact ids reach no URL of the store with the call\'s file token', async (posture, how) => {
    const seen: string[] = []
    const url = await fileStoreOn((req, res) => {
      seen.push(`${req.method} ${req.url} ${req.headers.authorization}`)
      res.writeHead(200, { 'content-type': 'application/json' }).end('{"listing":"of the store"}')
    })
    await withHost({ ...wallsPackWith(['files-name', 'echo']), env: posture === 'strict' ? STRICT : {} }, async (host) => {
      for (const char of ['.', '..']) {
        const attack = await rawInvoke(
          host.port,
          'files-name',
          { ...how, char, chars: 1, ms: 300 },
          { tenantId: 'tenant-a', runId: 'attack', idempotencyKey: 'k1', toolFiles: { url, token: 'tenant-a-file-token' } },
        )
        const output = 'error' in attack ? attack : attack.body?.output
        if (!how.raw) expect.soft(output, `the handler was refused ${char}`).toMatchObject({ done: 0, first: expect.stringContaining('no artifact id') })
      }
      await sleep(200)
      expect(seen, 'requests the store received').toEqual([])
      await stillServes(host)
    })
  })

  it("pool-threads: a strict call that raises UV_THREADPOOL_SIZE to 64 gets no more threads than libuv's pool had", async () => {
    await withHost({ ...wallsPackWith(['pool-threads', 'echo']), env: STRICT }, async (host) => {
      const { result, most } = await highest(
        host,
        threadsOf,
        100,
        rawInvoke(host.port, 'pool-threads', { n: 64, holdMs: 1500 }, { tenantId: 'tenant-a', runId: 'attack' }, 10_000),
      )
      expect.soft('error' in result ? result : result.body?.kind, 'the attack answered').toBe('result')
      // Node's own threads (V8's platform), libuv's pool of 4 and the main thread: about a dozen;
      // before the wall, 64 more in the attack's process.
      expect(most, 'the most threads a pack process had').toBeLessThan(24)
      await stillServes(host)
    })
  })

  it('pool-burn: a strict cpuMs 1000 call burning CPU on four pool threads is stopped near 1000 ms of CPU, not when 1000 ms of wall time have passed', async () => {
    await withHost({ ...wallsPackWith(['pool-burn', 'echo']), env: STRICT }, async (host) => {
      const { result, most } = await highest(
        host,
        (pid) => cpuTimeMs(pid) ?? 0,
        10,
        rawInvoke(host.port, 'pool-burn', { ms: 5000 }, { tenantId: 'tenant-a', runId: 'attack' }, 10_000),
      )
      expect
        .soft('error' in result ? result : result.body, 'the attack answered')
        .toMatchObject({ kind: 'error', code: 'deadline-exceeded', message: expect.stringContaining('cpuMs') })
      // Read every 20 ms from its start, a process of up to five busy threads passes its cpuMs by
      // a few reads at most; before the wall, by as many busy threads as the machine has cores.
      expect(most, "the attack's process CPU time, ms").toBeLessThan(1300)
      await stillServes(host)
    })
  })

  it('native-spin: a warm cpuMs call stuck in native code after its answer gives its slot back within seconds, with a cap of one', async () => {
    await withHost({ ...wallsPackWith(['native-spin', 'echo']), env: { KINDGI_PACK_SERVICE_MAX_CONCURRENCY: '1' } }, async (host) => {
      // The fixture's most: ~20-35 s of one core here, so that a machine twice as fast still holds the slot past the bound below without the wall.
      const attack = await rawInvoke(host.port, 'native-spin', { iterations: 30_000_000 }, { tenantId: 'tenant-a', runId: 'attack' }, 10_000)
      expect.soft('error' in attack ? attack : attack.body, 'the attack answered at its cpuMs').toMatchObject({ kind: 'error', code: 'deadline-exceeded' })
      const answeredAt = performance.now()
      // Before the wall, 503 overloaded for as long as the native call ran.
      let echo: Awaited<ReturnType<typeof rawInvoke>> | undefined
      while (performance.now() - answeredAt < 15_000) {
        echo = await rawInvoke(host.port, 'echo', { next: 1 }, { tenantId: 'tenant-b', runId: 'victim' })
        if (!('error' in echo) && echo.status === 200) break
        await sleep(250)
      }
      const waitedMs = performance.now() - answeredAt
      expect
        .soft(echo && !('error' in echo) ? echo.body : echo, "tenant b's echo")
        .toEqual({ v: 2, kind: 'result', output: { input: { next: 1 }, tenantId: 'tenant-b' } })
      // The grace is 5 s from the answer.
      expect(waitedMs, "ms until tenant b's echo was let in").toBeLessThan(9_000)
    })
  }, 40_000)

  it.each([
    ['a pause from a tool whose index does not allow one', { body: '{"v":2,"kind":"pause","timeoutMs":2073600000,"name":"forged"}' }, 'pause-not-available'],
    ['an error body under outcome ok', { body: '{"v":2,"kind":"error","code":"tool-not-in-pack","message":"forged"}' }, 'handler-throw'],
    ['a body that is no JSON', { outcome: 'handler-throw', body: 'not json at all' }, 'handler-throw'],
  ])('forge-result (strict): %s, written on fd 3, is answered as what it is, and its call line says so', async (_what, input, code) => {
    await withHost({ ...wallsPackWith(['forge-result', 'echo']), env: STRICT }, async (host) => {
      const res = await rawInvoke(host.port, 'forge-result', input, { tenantId: 'tenant-a', runId: 'attack' })
      expect.soft('error' in res ? res : res.status, 'the status').toBe(200)
      expect.soft('error' in res ? res : res.body, "the attack's answer").toMatchObject({ v: 2, kind: 'error', code, toolId: 'forge-result' })
      await host.waitFor('call', (l) => l.id === 'forge-result')
      expect
        .soft(
          host.lines.filter((l) => l.kind === 'call' && l.id === 'forge-result').map((l) => l.outcome),
          'its call line',
        )
        .toEqual([code])
      await stillServes(host)
    })
  })
})
