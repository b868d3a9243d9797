// Finding 13 (non-strict service, where only in-worker guards stand): `new ChildProcess().spawn()`
// skipped the spawn and network guards; a nested Worker from a limited tool kept running after
// the answer; a context-isolated call posted `kindgi-answer` for another tenant's concurrent
// call of the same tool, which received the forged answer.
import { existsSync, readFileSync } from 'node:fs'
import { join } from 'node:path'
import { describe, expect, it } from 'vitest'
import { type LogLine, sleep, within } from '../helpers/host.js'
import { rawInvoke, scratchDir, STRICT, stillServes, wallsHost, withHost } from './walls-helpers.js'

describe('finding 13: a non-strict service holds its promises past the guards', () => {
  const host = wallsHost({ env: { KINDGI_PACK_WORKER_THREADS: '4' } })

  it('a strict, network-none tool spawns no process, not even through the ChildProcess class', async () => {
    const marker = join(scratchDir('child'), 'spawned.txt')
    const res = await rawInvoke(host.port, 'raw-child', { marker }, { tenantId: 'tenant-a', runId: 'attack' })
    await sleep(200)
    expect.soft(existsSync(marker), `the spawned shell wrote its marker (${JSON.stringify('error' in res ? res : res.body)})`).toBe(false)
    expect.soft('error' in res ? res : res.body, "the attack's answer").toMatchObject({ v: 2, kind: 'error', toolId: 'raw-child' })
    await stillServes(host)
  })

  const attacks = [
    { forge: false, how: '', ends: ['cpu'] },
    // What pack code writes on the channel is not sealed: its first such line ends its process
    // at once (stop 36, crash), unless the thread count caught the Worker first (cpu).
    { forge: true, how: " that forges its process's thread count", ends: ['crash', 'cpu'] },
    { forge: 'rebase', how: " whose handler asks the front to read Node's own threads again (stop 35)", ends: ['crash', 'cpu'] },
  ]
  for (const { forge, how, ends } of attacks) {
    it(`nothing a cpuMs-limited tool started runs on after its answer (a nested Worker${how})`, async () => {
      const dir = scratchDir('nested')
      const allReplaced = () => host.lines.filter((l) => l.kind === 'worker-replaced').length
      let heartbeat: string
      let replacedAllBefore: number
      let res: Awaited<ReturnType<typeof rawInvoke>>
      // The front's periodic count may catch the Worker before its first heartbeat and kill the
      // process mid-call (the wall, sooner): that attack never reached its answer, so it runs
      // again, once its process is replaced. Unwalled, the first attempt always answers.
      for (let attempt = 1; ; attempt++) {
        heartbeat = join(dir, `heartbeat-${attempt}.txt`)
        replacedAllBefore = allReplaced()
        const replacedAll = replacedAllBefore
        res = await rawInvoke(host.port, 'nested-worker', { heartbeat, forge }, { tenantId: 'tenant-a', runId: 'attack' })
        if (attempt === 3 || forge !== false || ('error' in res ? res : res.body)?.kind === 'result') break
        console.log(`nested-worker: attempt ${attempt} killed mid-call: ${JSON.stringify('error' in res ? res : res.body).slice(0, 200)}`)
        await within(5000, () => allReplaced() > replacedAll)
      }
      const answeredAt = Date.now()
      // The front kills the process a few thread counts after the answer, later on a loaded
      // machine; unwalled, the worker beats for its whole 3 s (from just before the answer).
      await sleep(1500)
      const beats = existsSync(heartbeat) ? readFileSync(heartbeat, 'utf8').trim().split('\n').map(Number) : []
      if (forge === false) expect.soft(beats.length, 'the nested worker ran (the attack happened)').toBeGreaterThan(0)
      const late = beats.filter((t) => t > answeredAt + 1000)
      expect.soft(late.length, `heartbeats more than 1 s after the answer (${JSON.stringify('error' in res ? res : res.body)})`).toBe(0)
      // The front counted a thread the pool does not have, and replaced the process that ran it;
      // or (forge) it read a line the process's code did not seal, and ended it: mid-call, the
      // line names the call, and after its answer no call (the Worker's first write may come
      // either side of the answer).
      const ours = (l: LogLine) => l.id === 'nested-worker@1.0.0' || (forge !== false && l.id === undefined)
      const replaced = () =>
        host.lines
          .filter((l) => l.kind === 'worker-replaced')
          .slice(replacedAllBefore)
          .filter(ours)
      await within(5000, () => replaced().length > 0)
      expect.soft(replaced().length, 'the process that ran the Worker, replaced once').toBe(1)
      expect.soft(ends, `why it was replaced: ${JSON.stringify(replaced())}`).toContain(replaced()[0]?.reason)
      await stillServes(host)
    })
  }

  for (const { fd3, how } of [
    { fd3: false, how: 'posting on its worker port' },
    { fd3: true, how: "writing on its pack process's channel to the front (fd 3; stop 36)" },
  ]) {
    it(`a context-isolated call cannot answer another tenant's concurrent call of the same tool, ${how}`, async () => {
      const victim = rawInvoke(host.port, 'forge-answer', { role: 'victim', ms: 1500 }, { tenantId: 'tenant-b', runId: 'victim' })
      await sleep(400)
      const attack = await rawInvoke(host.port, 'forge-answer', { role: 'attacker', upTo: 300, fd3 }, { tenantId: 'tenant-a', runId: 'attack' })
      expect(attack).toMatchObject({ status: 200 })
      const answer = await victim
      // Its own answer, or (fd 3: the attack's unsealed line ended the process they share) exited; never the forged one.
      const own = { v: 2, kind: 'result', output: { answeredFor: 'tenant-b' } }
      const body = 'error' in answer ? answer : answer.body
      if (fd3) expect.soft(JSON.stringify(body), "the victim's answer").toMatch(/"answeredFor":"tenant-b"|exited/)
      else expect.soft(body, "the victim's answer").toEqual(own)
      expect.soft(JSON.stringify(body), "the victim's answer").not.toContain('forged')
      await stillServes(host)
    })
  }
})

describe('a result the host does not send', () => {
  it('under strict, a process that sends its own malformed result gets handler-throw, and the service serves on', async () => {
    await withHost({ env: STRICT }, async (host) => {
      const res = await rawInvoke(host.port, 'forge-result', {}, { tenantId: 'tenant-a', runId: 'attack' })
      expect.soft('error' in res ? res : res.body, "the attack's answer").toMatchObject({ v: 2, kind: 'error', code: 'handler-throw', toolId: 'forge-result' })
      await stillServes(host)
    })
  })

  it('under strict, a process that says its call never ran (host-failed) after it ran gets handler-throw, not a 503 a caller would retry', async () => {
    await withHost({ env: STRICT }, async (host) => {
      const res = await rawInvoke(host.port, 'forge-result', { outcome: 'host-failed' }, { tenantId: 'tenant-a', runId: 'attack' })
      expect.soft('error' in res ? res : res.status, 'the status').toBe(200)
      expect.soft('error' in res ? res : res.body, "the attack's answer").toMatchObject({ v: 2, kind: 'error', code: 'handler-throw', toolId: 'forge-result' })
      const notStarted = host.lines.filter((l) => l.kind === 'call-not-started')
      expect.soft(notStarted, 'call-not-started lines').toEqual([])
      await stillServes(host)
    })
  })
})
