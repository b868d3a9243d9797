// Stop 38: a red-team pass (the fifth). What each crossed before its wall:
//
// 1. pinned-leak: with --watch, a boot reads the pack's source files for strict calls to load
//    as the boot saw them (pinned sources). The front read them as the service's user, outside
//    every wall, links followed: a pack's `tools/env.cjs` linked to /proc/self/environ was read
//    as the front's environment, and a strict tool that imported it (a resolve hook pointing
//    straight at the link) got that text, the service token included, in the error its import
//    threw. A link to a FIFO stalled the front's boot. The front now pins only regular files
//    that a strict process could read itself.
// 2. metrics-hog: a tool with network access held thousands of connections to the metrics
//    port, which had no bound: the front ran out of descriptors and every port went deaf.
// 3. idle-burn: a cpuMs tool replaced Atomics.wait, which Piscina's worker calls as it parks
//    between tasks: its code ran there after its call had answered, where no cpuMs counts,
//    burning most of a core for as long as it liked. A limited pool now reads its idle
//    workers' CPU time from outside them and ends one that spends it.
// 4. idle-hold: a memMB tool allocated a gigabyte after its end-of-call memory check, from the
//    same hook or from microtasks queued as it answered: held until the worker's next call,
//    which was charged for it. The same watch reads idle workers' heaps and ends one past memMB.
// 5. pipeline-hold (a second pass): thousands of pipelined scrapes on the metrics port, never
//    read, were each answered at once with a rendering of their own: the front's event loop
//    and a gigabyte went to answers nobody read. A socket that pipelines is now closed.
// 6. token-link: a strict tool read its pack's link to the token file: Node's permission model
//    checks a link's own path, in the pack, and follows it. The kernel now refuses a strict
//    process every read outside its roots, its call folder, Node's install and system files.
import { execFileSync } from 'node:child_process'
import { readdirSync, symlinkSync, writeFileSync } from 'node:fs'
import { join } from 'node:path'
import { describe, expect, it } from 'vitest'
import { METRICS_MAX_CONNECTIONS } from '../../src/metrics-server.js'
import { sleep, TOKEN } from '../helpers/host.js'
import { ECHO_TOOL, writeScratchPack } from '../helpers/scratch-pack.js'
import { landlockOf, NO_CAPABILITIES, rawHttp, rawInvoke, rssMB, scratchDir, STRICT, stillServes, treeCpuMs, wallsPackWith, withHost } from './walls-helpers.js'

/** Imports `input.file` (relative to its own file) through a resolve hook that skips the resolver, and returns what the import gave or threw. */
const PINNED_LEAK = `
export default async (input) => {
  const { registerHooks } = process.getBuiltinModule('node:module')
  const target = new URL(input.file, import.meta.url).href
  registerHooks({ resolve: (specifier, context, next) => (specifier === 'leak:' ? { url: target, shortCircuit: true } : next(specifier, context)) })
  try {
    return { imported: JSON.stringify(await import('leak:')).slice(0, 20000) }
  } catch (err) {
    return { threw: String(err?.stack ?? err).slice(0, 20000) }
  }
}
`
/** Reads `input.file` (relative to its own file) and returns its text, or the error's code. */
const READ_LINK = `
import { readFileSync } from 'node:fs'
export default (input) => {
  try {
    return { text: readFileSync(new URL(input.file, import.meta.url), 'utf8') }
  } catch (err) {
    return { denied: err.code }
  }
}
`

/** A pack of `echo` and `pinned-leak` in a scratch folder, with `links` (name in tools/ → target) and FIFOs named in `fifos` (in its root). */
function leakPack(links: Record<string, string>, fifos: string[] = []): string {
  const root = scratchDir('pinned')
  writeScratchPack(root, 'pinned', { echo: ECHO_TOOL, 'pinned-leak': { code: PINNED_LEAK }, 'read-link': { code: READ_LINK } })
  for (const [name, target] of Object.entries(links)) symlinkSync(target, join(root, 'tools', name))
  for (const name of fifos) execFileSync('mkfifo', [join(root, name)])
  // The service's user (nobody, under NO_CAPABILITIES) reads it as a deployed pack.
  execFileSync('chmod', ['-R', 'a+rX', root])
  return join(root, 'index.json')
}

const watched = (index: string) => ({ args: ['--index', index, '--host', '127.0.0.1', '--watch'], env: STRICT, command: NO_CAPABILITIES })

describe('stop 38: with --watch, what the front pins for strict calls is only what they could read themselves', () => {
  it('pinned-leak: a strict tool importing a link of its pack to /proc/self/environ gets no text of the front, the token least of all', async () => {
    await withHost(watched(leakPack({ 'env.cjs': '/proc/self/environ', 'env.js': '/proc/self/environ' })), async (host) => {
      for (const file of ['./env.cjs', './env.js']) {
        const answer = await rawInvoke(host.port, 'pinned-leak', { file }, { tenantId: 'tenant-a', runId: 'attack' })
        expect('error' in answer ? answer.error : answer.status, `the call importing ${file} was answered`).toBe(200)
        const text = JSON.stringify(answer)
        // Its own environ (what it reads when nothing is pinned) is the filtered one a strict process gets; the front's holds the token.
        expect.soft(text.includes(TOKEN), `the service token in the answer importing ${file}: ${text.slice(0, 300)}`).toBe(false)
      }
      await stillServes(host)
    })
  })

  it('a source file of the pack linked to a FIFO does not stall the front: it starts, and serves', async () => {
    // Before, the boot read it and waited for a writer: no listening line, ever.
    await withHost(watched(leakPack({ 'pipe.js': '../fifo' }, ['fifo'])), async (host) => {
      await stillServes(host)
    })
  })
})

describe('stop 38: a strict call reads nothing through a link its pack ships', () => {
  it("token-link: a strict tool reading its pack's link to the token file, kept outside every folder it may read, is refused by the kernel", async () => {
    // Before (the first red-team pass), Node's permission model checked the link's path, in the
    // pack, and followed it: the tool read the token.
    const secrets = scratchDir('secret')
    const token = join(secrets, 'token')
    writeFileSync(token, TOKEN)
    execFileSync('chmod', ['-R', 'a+rX', secrets])
    const index = leakPack({ 'tok.js': token })
    const env = { ...STRICT, KINDGI_PACK_SERVICE_TOKEN: undefined, KINDGI_PACK_SERVICE_TOKEN_FILE: token }
    await withHost({ args: ['--index', index, '--host', '127.0.0.1'], env, command: NO_CAPABILITIES }, async (host) => {
      const { wall } = landlockOf('the token-link test')
      const answer = await rawInvoke(host.port, 'read-link', { file: './tok.js' }, { tenantId: 'tenant-a', runId: 'attack' })
      expect.soft(JSON.stringify(answer).includes(TOKEN), `the token in the answer: ${JSON.stringify(answer).slice(0, 300)}`).toBe(false)
      if (wall.kind === 'on')
        expect.soft('error' in answer ? answer : answer.body, 'what the tool read').toMatchObject({ kind: 'result', output: { denied: 'EACCES' } })
      await stillServes(host)
    })
  })
})

describe('stop 38: the metrics port is bounded as the protocol port is', () => {
  it("metrics-hog: a strict tool holding hundreds of connections to the metrics port takes few of the front's descriptors, and a scrape is served", async () => {
    // Before, each connection it held was a descriptor of the front's: 27,000 took the front to
    // this machine's limit in the attack's run, and every port went deaf.
    await withHost({ ...wallsPackWith(['conn-hog']), env: { ...STRICT, KINDGI_PACK_METRICS_PORT: '0' } }, async (host) => {
      const metricsPort = host.lines.find((l) => l.kind === 'listening')?.metricsPort as number
      const descriptors = () => readdirSync(`/proc/${host.proc.pid}/fd`).length
      const before = descriptors()
      const attack = rawInvoke(host.port, 'conn-hog', { port: metricsPort, n: 300, ms: 3000 }, { tenantId: 'tenant-a', runId: 'attack' })
      await sleep(1500)
      const during = descriptors()
      const scrape = await rawHttp(metricsPort, { path: '/metrics' })
      const answer = await attack
      expect(
        'error' in answer ? answer : answer.body?.output?.answered,
        `the attack's connections were answered: ${JSON.stringify(answer).slice(0, 300)}`,
      ).toBeGreaterThan(0)
      expect.soft(during - before, "the front's descriptors added during the attack").toBeLessThan(METRICS_MAX_CONNECTIONS + 20)
      expect.soft('error' in scrape ? scrape : scrape.status, 'a scrape during the attack').toBe(200)
      await stillServes(host)
    })
  })
})

describe('stop 38: pipelined requests on the metrics port cost the front one answer at a time', () => {
  it("pipeline-hold: 16 connections each writing 20,000 pipelined scrapes and reading none leave the front's memory and another tenant's call alone", async () => {
    // Before (a second red-team pass), each request was answered at once with its own
    // rendering: the front's RSS went from 119 to 1,356 MB in 6 s, and another tenant's echo
    // waited seconds. Now what a socket sent before it was closed is parsed still (some 150 MB
    // of garbage in one CI run), whatever it pipelined after.
    await withHost({ ...wallsPackWith(['pipeline-hold']), env: { ...STRICT, KINDGI_PACK_METRICS_PORT: '0' } }, async (host) => {
      const metricsPort = host.lines.find((l) => l.kind === 'listening')?.metricsPort as number
      const before = rssMB(host.proc.pid)
      const attack = rawInvoke(
        host.port,
        'pipeline-hold',
        { port: metricsPort, conns: 16, requests: 20_000, ms: 4000 },
        { tenantId: 'tenant-a', runId: 'attack' },
      )
      await sleep(2000)
      const started = Date.now()
      const victim = await rawInvoke(host.port, 'echo', { during: 'the attack' }, { tenantId: 'tenant-b', runId: 'victim' })
      const victimMs = Date.now() - started
      const grown = rssMB(host.proc.pid) - before
      const answer = await attack
      expect('error' in answer ? answer : answer.body?.output?.connected, `the attack connected: ${JSON.stringify(answer).slice(0, 300)}`).toBe(16)
      expect.soft(grown, "the front's RSS grown during the attack, MB").toBeLessThan(400)
      expect.soft('error' in victim ? victim : victim.status, "another tenant's call during the attack").toBe(200)
      expect.soft(victimMs, "ms for another tenant's call during the attack").toBeLessThan(3000)
      await stillServes(host)
    })
  })
})

describe("stop 38: a limited warm tool's code runs on its worker between calls at most briefly", () => {
  it.each(['none', 'context-isolated'])(
    'idle-burn (%s): a cpuMs tool that replaced Atomics.wait, spinning where Piscina parks its worker after the answer, has that worker ended within seconds',
    async (posture) => {
      await withHost({ ...wallsPackWith(['idle-burn']), env: { KINDGI_PACK_SANDBOX: posture } }, async (host) => {
        const attack = await rawInvoke(host.port, 'idle-burn', { secs: 8 }, { tenantId: 'tenant-a', runId: 'attack' })
        expect('error' in attack ? attack : attack.body, 'the call itself answered ok, within its cpuMs').toMatchObject({
          kind: 'result',
          output: { hooked: true },
        })
        const replaced = await host.waitFor('worker-replaced', (l) => l.reason === 'cpu' && l.id === 'idle-burn@1.0.0', 4_000).catch(() => undefined)
        // Before, none: the pack process burned ~6.7 s of CPU in the next 8 s, and nothing was logged.
        expect(replaced, 'a worker-replaced cpu line for idle-burn').toBeDefined()
        const cpuFrom = treeCpuMs(host.proc.pid as number)
        await sleep(1500)
        expect.soft(treeCpuMs(host.proc.pid as number) - cpuFrom, 'CPU of the service over 1.5 s once the worker was ended, ms').toBeLessThan(700)
        expect
          .soft(
            host.lines.filter((l) => l.kind === 'worker-replaced').map((l) => l.reason),
            'the replacements logged',
          )
          .toEqual(['cpu'])
        await stillServes(host)
      })
    },
  )
})

describe("stop 38: a limited warm tool's worker holds no more than memMB between calls", () => {
  it.each([
    ['a replaced Atomics.wait', { how: 'hook' }],
    ['microtasks queued as it answers', { how: 'microtask', hop: 8 }],
  ])("idle-hold (%s): memory allocated after the call's own check has that worker ended within seconds", async (_how, input) => {
    await withHost(wallsPackWith(['idle-hold']), async (host) => {
      const attack = await rawInvoke(host.port, 'idle-hold', { ...input, mb: 512 }, { tenantId: 'tenant-a', runId: 'attack' }, 20_000)
      expect('error' in attack ? attack : attack.status, 'the call was answered').toBe(200)
      // Before, none (the hook); the microtasks landed after the check in 9 of 9 of the red team's runs at hops 7-10.
      const replaced = await host.waitFor('worker-replaced', (l) => l.reason === 'memory' && l.id === 'idle-hold@1.0.0', 4_000).catch(() => undefined)
      expect(replaced, 'a worker-replaced memory line for idle-hold').toBeDefined()
      await stillServes(host)
    })
  })
})
