import { join } from 'node:path'
import { describe, expect, it } from 'vitest'
import { sleep } from '../helpers/host.js'
import { writeScratchPack } from '../helpers/scratch-pack.js'
import { processTree, rawInvoke, rssMB, scratchDir, stillServes, treeCpuMs, wallsPackWith, withHost } from './walls-helpers.js'

describe("stop 39: a limited warm tool's code runs on its worker between calls at most briefly, however often it is called", () => {
  it.each(['none', 'context-isolated'])(
    'idle-burn called every 150 ms (%s): a worker that spins between cheap calls is ended within seconds',
    async (posture) => {
      await withHost({ ...wallsPackWith(['idle-burn']), env: { KINDGI_PACK_SANDBOX: posture } }, async (host) => {
        const until = Date.now() + 6_000
        let calls = 0
        while (Date.now() < until && !host.lines.some((l) => l.kind === 'worker-replaced')) {
          const attack = await rawInvoke(host.port, 'idle-burn', { secs: 8 }, { tenantId: 'tenant-a', runId: `attack-${calls++}` })
          expect('error' in attack ? attack : attack.body, 'each call answered ok, within its cpuMs').toMatchObject({
            kind: 'result',
            output: { hooked: true },
          })
          await sleep(150)
        }
        // Before, none in 6 s: a call reached each worker between every two reads, and the watch compared none.
        const replaced = host.lines.find((l) => l.kind === 'worker-replaced')
        expect(replaced, `a worker-replaced line for idle-burn, within 6 s (${calls} calls made)`).toMatchObject({ reason: 'cpu', id: 'idle-burn@1.0.0' })
        await stillServes(host)
      })
    },
  )
})

describe('stop 39: a memMB pack process holds no more than its workers may under memMB, whatever the memory', () => {
  it.each(['none', 'context-isolated'])(
    'shared-hold (%s): a gigabyte of SharedArrayBuffers has its pack process killed within seconds, and the service serves on',
    async (posture) => {
      await withHost({ ...wallsPackWith(['shared-hold']), env: { KINDGI_PACK_SANDBOX: posture } }, async (host) => {
        const attack = await rawInvoke(host.port, 'shared-hold', { mb: 1024 }, { tenantId: 'tenant-a', runId: 'attack' }, 20_000)
        expect('error' in attack ? attack : attack.status, 'the call was answered').toBe(200)
        // Before, none: the pack process held the gigabyte for as long as it lived, 12 MB of it counted.
        const replaced = await host.waitFor('worker-replaced', (l) => l.reason === 'memory' && l.id === 'shared-hold@1.0.0', 5_000).catch(() => undefined)
        expect(replaced, 'a worker-replaced memory line for shared-hold').toBeDefined()
        await sleep(500)
        const held = processTree(host.proc.pid as number).reduce((mb, pid) => mb + rssMB(pid), 0)
        expect.soft(held, "the service's processes' memory once the pack process was killed, MB").toBeLessThan(700)
        await stillServes(host)
      })
    },
  )
})

describe("stop 39: a cpuMs tool's work handed to libuv's thread pool counts against cpuMs", () => {
  it.each(['none', 'context-isolated'])(
    'pool-left (%s): async pbkdf2 jobs left running after the answer have the pack process killed within seconds',
    async (posture) => {
      await withHost({ ...wallsPackWith(['pool-left']), env: { KINDGI_PACK_SANDBOX: posture } }, async (host) => {
        const attack = await rawInvoke(host.port, 'pool-left', { secs: 10 }, { tenantId: 'tenant-a', runId: 'attack' })
        expect('error' in attack ? attack : attack.body, 'the call itself answered ok, at once').toMatchObject({ kind: 'result', output: { started: 4 } })
        // Before, none: the pool's four jobs ran on, both cores busy, for as long as they took.
        const replaced = await host.waitFor('worker-replaced', (l) => l.reason === 'cpu', 5_000).catch(() => undefined)
        expect(replaced, 'a worker-replaced cpu line').toBeDefined()
        await sleep(300)
        const cpuFrom = treeCpuMs(host.proc.pid as number)
        await sleep(1500)
        expect.soft(treeCpuMs(host.proc.pid as number) - cpuFrom, 'CPU of the service over 1.5 s once the process was killed, ms').toBeLessThan(700)
        await stillServes(host)
      })
    },
  )

  it('pool-burn (none): a call that awaits pool work past its cpuMs is answered deadline-exceeded naming cpuMs; one within it answers ok', async () => {
    await withHost(wallsPackWith(['pool-burn']), async (host) => {
      const within = await rawInvoke(host.port, 'pool-burn', { ms: 1 }, { tenantId: 'tenant-a', runId: 'within' })
      expect('error' in within ? within : within.body, 'one round of four pbkdf2 jobs, within cpuMs 1000').toMatchObject({
        kind: 'result',
        output: { burnt: true },
      })
      const past = await rawInvoke(host.port, 'pool-burn', { ms: 5000 }, { tenantId: 'tenant-a', runId: 'past' })
      // Before, { burnt: true } after 5 s and some 10 s of CPU: the worker's busy time was a few ms.
      expect('error' in past ? past : past.body, 'five seconds of them').toMatchObject({
        kind: 'error',
        code: 'deadline-exceeded',
        message: expect.stringMatching(/cpuMs/),
      })
      await stillServes(host)
    })
  })
})

/** Replaces Atomics.wait at its module's top level: every worker that loads it burns ~90 % of a core wherever Piscina parks it, for 40 s at most. */
const HOOK_AT_LOAD = `
const wait = Atomics.wait
const stopAt = Date.now() + 40_000
Atomics.wait = function (...args) {
  if (Date.now() >= stopAt) return wait.apply(Atomics, args)
  const started = Date.now()
  while (Date.now() - started < 45);
  return wait.call(Atomics, args[0], args[1], args[2], 5)
}
export default () => ({ never: 'called' })
`

describe('stop 39: a limited pack process whose workers burn as they start is held back', () => {
  it('hook-at-load (none): after three workers ended for their starts in a row, no call between, the process is killed and not started again for seconds', async () => {
    const root = scratchDir('hook-at-load')
    writeScratchPack(root, 'hook-at-load', {
      hook: { code: HOOK_AT_LOAD, limits: { cpuMs: 200 } },
      echo: { code: 'export default (input, ctx) => ({ input, tenantId: ctx.tenantId })\n' },
    })
    await withHost({ args: ['--index', join(root, 'index.json'), '--module-root', root, '--host', '127.0.0.1'] }, async (host) => {
      // Two workers burn from the start, each ended at 5 s of CPU; the third ends at about 10 s.
      const killed = await host
        .waitFor('worker-replaced', (l) => l.reason === 'cpu' && host.lines.filter((k) => k.kind === 'worker-replaced').length >= 4, 40_000)
        .catch(() => undefined)
      // Before, a worker ended every 2.5 s or so, and another burning at once, for as long as the service ran.
      expect(killed, 'a fourth worker-replaced cpu line: the process killed after three ended starts').toBeDefined()
      await sleep(300)
      const cpuFrom = treeCpuMs(host.proc.pid as number)
      await sleep(3000)
      expect(treeCpuMs(host.proc.pid as number) - cpuFrom, 'CPU of the service over 3 s while the process is held back, ms').toBeLessThan(900)
      await stillServes(host)
    })
  }, 60_000)
})
