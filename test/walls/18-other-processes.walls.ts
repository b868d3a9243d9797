// Finding 3, by pid (stop 27). The front, the spawner and every pack process run as one user,
// and the kernel lets a process signal any other process of its user. The signal guard
// refused a pack process only its own pid and its parent's: a strict process killed the front
// (its grandparent, whose pid pack code finds by trying pids with signal 0), and warm pack code
// killed other pack processes, with their calls in flight; a child process of warm pack code
// (`/bin/kill`) is no JavaScript at all and killed the front itself. The wall: every pack
// process starts in a Landlock domain of its own (src/pool/landlock.ts), and the kernel
// refuses signals from inside it to any process outside it. The guard now also refuses a
// strict process every signal; the last test here holds the isolation unit without its guard.
import { spawn, spawnSync } from 'node:child_process'
import { mkdirSync, readFileSync, writeFileSync } from 'node:fs'
import { join } from 'node:path'
import { describe, expect, it, onTestFinished } from 'vitest'
import { callFolderEnv, PACK_PROCESS_MARKER, strictCommand } from '../../src/pool/strict-flags.js'
import { BIN, ROOT, sleep, type Host } from '../helpers/host.js'
import { alive, cmdline, landlockOf, packProcesses, parentOf, processTree, rawInvoke, scratchDir, STRICT, stillServes, withHost } from './walls-helpers.js'

const HELPER = `${ROOT}dist/workers/native/landlock-exec`
const { wall, kernelLacksIt } = landlockOf('walls 18')

type Signalled = { self: number; results: Array<{ pid: number; outcome: string }> }

/** A process's nice value, from /proc/<pid>/stat (field 19). */
function nice(pid: number): number {
  const raw = readFileSync(`/proc/${pid}/stat`, 'utf8')
  return Number(raw.slice(raw.lastIndexOf(')') + 2).split(' ')[16])
}

/** Its nice value, or undefined once it has ended. */
function niceIfAlive(pid: number): number | undefined {
  try {
    return nice(pid)
  } catch {
    return undefined
  }
}

/**
 * The strict spares among `pids`, read before an attack: one may end on its own meanwhile (the
 * spawner resizes them; the boot's probe is killed as the host starts to listen), and a process
 * that has ended has no command line left to tell.
 */
function strictSpares(pids: number[]): Set<number> {
  // A process the spawner has just started shows the spawner's own command line until it executes
  // its own (a spare taken for the spawner once failed CI on Node 26 as it ended): its parent tells.
  return new Set(pids.filter((pid) => cmdline(pid).includes('strict-process') || cmdline(parentOf(pid) ?? 0).includes('spawner-process')))
}

/** What the kernel must answer for each of `targets`: EPERM, or ESRCH for a strict spare that ended before the attack reached it. Never success. */
function refused(targets: number[], spares: Set<number>, results: Signalled['results']): Signalled['results'] {
  return targets.map((pid) => {
    const got = results.find((r) => r.pid === pid)?.outcome
    return { pid, outcome: spares.has(pid) && got === 'ESRCH' ? 'ESRCH' : 'EPERM' }
  })
}

async function signalPids(host: Host, pids: number[], fromChild = false, tool = 'signal-pids'): Promise<Signalled> {
  const answer = await rawInvoke(host.port, tool, { pids, fromChild }, { tenantId: 'tenant-a', runId: 'attack' })
  expect('error' in answer ? answer : answer.body, "the attack's own answer").toMatchObject({ v: 2, kind: 'result' })
  return (answer as { body: { output: Signalled } }).body.output
}

describe.skipIf(kernelLacksIt)('finding 3 by pid: no pack process signals or renices a process outside its own', () => {
  it('the host starts its pack processes in a Landlock domain, and its listening line says so', async () => {
    expect(wall, 'the helper built by npm run build, on a kernel that scopes signals').toMatchObject({ kind: 'on' })
    await withHost({}, async (host) => {
      const listening = host.lines.find((l) => l.kind === 'listening')
      expect(listening).toMatchObject({ landlock: 'on' })
    })
  })

  it('under none, warm pack code cannot kill the front or another pack process by its pid: the kernel refuses, and every process lives on', async () => {
    await withHost({ env: { KINDGI_PACK_SANDBOX: 'none' } }, async (host) => {
      const front = host.proc.pid as number
      const before = packProcesses(host)
      // Read before the attack (the walls pack has strict tools, whose spares may end on their own).
      const spares = strictSpares(before)
      // Every pack process's command line holds the marker (--kindgi-pack-process): warm ones are the rest.
      const warmBefore = before.filter((pid) => !spares.has(pid))
      const { self, results } = await signalPids(host, [front, ...before])
      const others = before.filter((pid) => pid !== self)
      expect(others.length, 'other pack processes to attack (the walls pack has several groups)').toBeGreaterThan(0)
      // The front is the attacker's parent, which the guard refuses; the other pack processes are the kernel's to refuse.
      expect(results).toEqual([{ pid: front, outcome: 'ERR_PACK_SIGNAL_DENIED' }, ...refused(others, spares, results)])
      await sleep(300)
      // The front and the warm pack processes must all live on.
      const warm = warmBefore.filter((pid) => pid !== self)
      expect(warm.length, 'warm pack processes attacked').toBeGreaterThan(0)
      expect(
        [front, ...warm].filter((pid) => !alive(pid)),
        'processes the attack ended',
      ).toEqual([])
      await stillServes(host)
    })
  })

  it("under none, warm pack code's child process (/bin/kill, no JavaScript) cannot kill the front: the kernel refuses", async () => {
    await withHost({ env: { KINDGI_PACK_SANDBOX: 'none' } }, async (host) => {
      const front = host.proc.pid as number
      const { results } = await signalPids(host, [front], true)
      expect(results).toEqual([{ pid: front, outcome: expect.stringMatching(/Operation not permitted/) }])
      await sleep(300)
      expect(alive(front), 'the front').toBe(true)
      await stillServes(host)
    })
  })

  it("under strict, pack code signals nothing: not the front, not the spawner, not another call's process, whose call answers as if nothing happened", async () => {
    await withHost({ env: STRICT }, async (host) => {
      const front = host.proc.pid as number
      const spawner = processTree(front).find((pid) => cmdline(pid).includes('spawner-process'))
      const victim = rawInvoke(host.port, 'canary-hold', { parts: ['held'], ms: 2_000 }, { tenantId: 'tenant-b', runId: 'victim' })
      await sleep(700)
      const victims = packProcesses(host)
      // A call folder named on a command line is readable to every process of the user (/proc/<pid>/cmdline).
      expect(
        victims.map(cmdline).filter((line) => line.includes('/call-')),
        'call folders on command lines',
      ).toEqual([])
      const { self, results } = await signalPids(host, [front, spawner as number, ...victims])
      expect(spawner, 'the spawner').toBeDefined()
      const targets = [front, spawner as number, ...victims.filter((pid) => pid !== self)]
      expect(results).toEqual(targets.map((pid) => ({ pid, outcome: 'ERR_PACK_SIGNAL_DENIED' })))
      const held = await victim
      expect('error' in held ? held : held.body, "the other tenant's call").toEqual({ v: 2, kind: 'result', output: { length: 4 } })
      await stillServes(host)
    })
  })

  for (const posture of ['strict', 'none'] as const) {
    it(`under ${posture}, pack code cannot renice the front, the spawner or another pack process: every priority stays as it was`, async () => {
      await withHost({ env: { KINDGI_PACK_SANDBOX: posture } }, async (host) => {
        const front = host.proc.pid as number
        const others = processTree(front).filter(
          (pid) => pid === front || cmdline(pid).includes('spawner-process') || cmdline(pid).includes(PACK_PROCESS_MARKER),
        )
        const before = others.map(nice)
        const spares = strictSpares(others)
        const { self, results } = await signalPids(host, others, false, 'renice-pids')
        const targets = others.filter((pid) => pid !== self)
        expect(targets.length, 'processes to renice besides the front').toBeGreaterThan(1)
        expect(results).toEqual(refused(targets, spares, results))
        // The attacker's own strict process is gone after its call, and a strict spare may have
        // ended on its own: the front, the spawner and the warm pack processes must live on, and
        // every process still there keeps its priority.
        expect(
          targets.filter((pid) => !spares.has(pid) && !alive(pid)),
          'ended since the attack',
        ).toEqual([])
        const changed = targets.filter((pid) => {
          const now = niceIfAlive(pid)
          return now !== undefined && now !== before[others.indexOf(pid)]
        })
        expect(changed, 'processes whose nice value the attack changed').toEqual([])
        await stillServes(host)
      })
    })
  }

  it("under none, warm pack code's child process cannot write the front's /proc entries, nor its own process's: the front's autogroup nice and oom_score_adj stay as they were", async () => {
    // In a session of its own: an autogroup is a session's, and should the wall fail, the attack must not renice this test run.
    await withHost({ env: { KINDGI_PACK_SANDBOX: 'none' }, command: ['setsid', process.execPath, BIN] }, async (host) => {
      const front = host.proc.pid as number
      const before = ['autogroup', 'oom_score_adj'].map((file) => readFileSync(`/proc/${front}/${file}`, 'utf8'))
      for (const [pid, file, value] of [
        [front, 'autogroup', 19],
        [front, 'oom_score_adj', 1000],
        ['self', 'autogroup', 19],
        ['self', 'oom_score_adj', 0],
      ] as const) {
        const answer = await rawInvoke(host.port, 'proc-write', { pid, file, value }, { tenantId: 'tenant-a', runId: 'attack' })
        expect('error' in answer ? answer : answer.body.output, `${pid} ${file}`).toEqual({ outcome: expect.stringMatching(/Permission denied/) })
      }
      expect(['autogroup', 'oom_score_adj'].map((file) => readFileSync(`/proc/${front}/${file}`, 'utf8'))).toEqual(before)
      await stillServes(host)
    })
  })

  it("a strict call's process, started as the host starts one but with code that never installs the guard, cannot signal a process outside it", async () => {
    // Whatever gets past the guard (a Node bug, say) meets this: the kernel's refusal.
    const dir = scratchDir('18')
    const entry = join(dir, 'signal-raw.cjs')
    writeFileSync(entry, "try { process.kill(Number(process.env.TARGET), 'SIGKILL'); console.log('sent') } catch (err) { console.log(err.code) }\n")
    const target = spawn('sleep', ['30'], { stdio: 'ignore' })
    onTestFinished(() => {
      target.kill('SIGKILL')
    })
    const [command, ...args] = strictCommand(entry, { readRoots: [dir], networkNone: true, memMB: undefined, dataBaseline: undefined }, undefined, wall)
    expect(command, 'started through the Landlock helper').toBe(HELPER)
    // As the spawner starts one: its call folder made, and named in its environment.
    const folder = join(dir, 'call')
    mkdirSync(folder)
    const run = spawnSync(command as string, args, { encoding: 'utf8', env: callFolderEnv(folder, { TARGET: String(target.pid) }), timeout: 10_000 })
    expect(run.stdout.trim(), `its own report (stderr: ${run.stderr})`).toBe('EPERM')
    expect(alive(target.pid as number), 'the process it tried to kill').toBe(true)
  })
})
