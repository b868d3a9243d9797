// Finding 7: pack code bypassed cpuMs by rewriting its own start mark in the cpu table the
// front reads (shared memory): a cpuMs 300 tool spun 2.5 s and answered ok.
import { describe, expect, it } from 'vitest'
import type { Host } from '../helpers/host.js'
import { rawInvoke, STRICT, stillServes, withHost } from './walls-helpers.js'

/** The attack's tool spins 5 s (cpu-restart's cap); cpuMs 300 must end it with deadline-exceeded well before. */
async function expectCpuMsHeld(host: Host, tool: string): Promise<void> {
  const started = Date.now()
  const res = await rawInvoke(host.port, tool, { ms: 5000 }, { tenantId: 'tenant-a', runId: 'attack' }, 10_000)
  const took = Date.now() - started
  expect.soft('error' in res ? res : res.body, "the attack's answer").toMatchObject({ v: 2, kind: 'error', code: 'deadline-exceeded', toolId: tool })
  if (!('error' in res)) expect.soft(String(res.body?.message), 'the message').toContain('cpuMs 300')
  // Unwalled, the answer comes after the whole 5 s spin; walled, at 300 ms of CPU, later on a loaded machine.
  expect.soft(took, 'ms until the answer').toBeLessThan(4000)
  await stillServes(host)
}

describe('finding 7: cpuMs holds whatever pack code writes in memory it can reach', () => {
  for (const posture of ['strict', 'none'] as const) {
    it(`under ${posture}, a cpuMs 300 tool that rewrites its start mark and spins 5 s answers deadline-exceeded naming cpuMs, well before 5 s`, async () => {
      await withHost({ env: posture === 'strict' ? STRICT : {} }, (host) => expectCpuMsHeld(host, 'cpu-rewrite'))
    })
  }
})

describe('finding 7, in a process of its own: cpuMs holds whatever pack code says on its channel', () => {
  it('under strict, a cpuMs 300 tool that sends the "started" mark again and again while it spins has its process killed at the first, well before 5 s', async () => {
    // Stop 40: a message of a type no strict process sends kills it (the spawner); before, cpuMs ended it at 300 ms of CPU.
    await withHost({ env: STRICT }, async (host) => {
      const started = Date.now()
      const res = await rawInvoke(host.port, 'cpu-restart', { ms: 5000 }, { tenantId: 'tenant-a', runId: 'attack' }, 10_000)
      expect.soft('error' in res ? res : res.body, "the attack's answer").toMatchObject({ v: 2, kind: 'error', code: 'handler-throw', toolId: 'cpu-restart' })
      if (!('error' in res)) expect.soft(String(res.body?.message), 'the message').toContain('killed for its channel')
      expect.soft(Date.now() - started, 'ms until the answer').toBeLessThan(4000)
      await stillServes(host)
    })
  })
})

describe("stop 24: cpuMs counts a strict call's module code too, from a mark the front takes", () => {
  it('under strict, a cpuMs 300 tool whose module spins 1.5 s at its top level answers deadline-exceeded naming cpuMs', async () => {
    await withHost({ env: STRICT }, async (host) => {
      const res = await rawInvoke(host.port, 'cpu-top-level', {}, { tenantId: 'tenant-a', runId: 'attack' }, 10_000)
      expect
        .soft('error' in res ? res : res.body, "the attack's answer")
        .toMatchObject({ v: 2, kind: 'error', code: 'deadline-exceeded', toolId: 'cpu-top-level' })
      if (!('error' in res)) expect.soft(String(res.body?.message), 'the message').toContain('cpuMs 300')
      await stillServes(host)
    })
  })
})
