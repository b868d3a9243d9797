// Found by an attack on the walls in stop 24. A strict call's process talks to the host on
// fd 3, and pack code can write there too: a message that was no object, or a file request
// whose fields could not be printed, threw in the front's handler (the service drained and
// exited); a malformed frame threw in the spawner and ended it, with every strict call in
// flight. And pack code signalled the process above it through the raw process._kill, which the
// signal guard did not cover: SIGUSR1 opened that process's inspector to it.
import { readFileSync } from 'node:fs'
import { connect } from 'node:net'
import { describe, expect, it } from 'vitest'
import { startFakeFileStore } from '../helpers/fake-file-store.js'
import { sleep, type Host } from '../helpers/host.js'
import { cmdline, processTree, rawInvoke, spawnerPeakMB, STRICT, stillServes, withHost } from './walls-helpers.js'

const victimCtx = { tenantId: 'tenant-b', runId: 'victim' }

/**
 * Runs `tool` as tenant a while tenant b's 1.5-s call is in flight, and answers the attack's
 * answer once the victim's is in: the victim answered ok, and the front logged no internal error.
 */
async function attackBesideVictim(host: Host, tool: string): Promise<Awaited<ReturnType<typeof rawInvoke>>> {
  const victim = rawInvoke(host.port, 'abort-victim', { ms: 1500 }, victimCtx, 10_000)
  await sleep(300)
  const attack = await rawInvoke(host.port, tool, {}, { tenantId: 'tenant-a', runId: 'attack' }, 10_000)
  const answer = await victim
  expect.soft('error' in answer ? answer : answer.body, "the victim's answer").toEqual({ v: 2, kind: 'result', output: { aborted: false } })
  expect
    .soft(
      host.lines.filter((l) => l.kind === 'internal-error'),
      'internal errors in the front',
    )
    .toEqual([])
  return attack
}

describe('stop 24: nothing pack code writes on its channel stops the front, the spawner or another call', () => {
  for (const tool of ['channel-null', 'channel-garbage', 'channel-unprintable', 'channel-deep']) {
    it(`under strict, ${tool}: another tenant's call in flight answers ok, and the service serves on`, async () => {
      await withHost({ env: STRICT }, async (host) => {
        const attack = await attackBesideVictim(host, tool)
        expect.soft('error' in attack, "the attack's call was answered").toBe(false)
        await stillServes(host)
      })
    })
  }
})

describe('stop 24: what a strict call sends is bounded on its way to the front', () => {
  for (const [tool, what, why] of [
    ['channel-flood', '64 MiB written on its channel with no end of message', 'killed for its channel'],
    ['big-answer-raw', 'a result of 48 MiB written on its channel as one line', 'killed for its channel'],
    // Returned, it is refused by the process's own code first (a guard), with a clearer answer.
    ['big-answer', 'an answer of 48 MiB', 'AnswerTooLarge'],
  ] as const) {
    it(`under strict, ${what}: the call fails, the spawner holds no more than the bound, another call answers ok`, async () => {
      await withHost({ env: STRICT }, async (host) => {
        const victim = rawInvoke(host.port, 'abort-victim', { ms: 2000 }, victimCtx, 10_000)
        await sleep(300)
        const attack = await rawInvoke(host.port, tool, {}, { tenantId: 'tenant-a', runId: 'attack' }, 20_000)
        expect.soft('error' in attack ? attack : attack.body, "the attack's answer").toMatchObject({ v: 2, kind: 'error', code: 'handler-throw', toolId: tool })
        if (!('error' in attack)) expect.soft(String(attack.body?.message), 'the message').toContain(why)
        const answer = await victim
        expect.soft('error' in answer ? answer : answer.body, "the victim's answer").toEqual({ v: 2, kind: 'result', output: { aborted: false } })
        // Its own ~50 MB, and at most one bounded line (16 MiB) held for the process.
        expect.soft(spawnerPeakMB(host), "the spawner's peak resident MB").toBeLessThan(160)
        await stillServes(host)
      })
    })
  }
})

/** The highest resident memory the front has had, in MB. */
function frontPeakMB(host: Host): number {
  const kb = /^VmHWM:\s+(\d+) kB/m.exec(readFileSync(`/proc/${host.proc.pid}/status`, 'utf8'))?.[1]
  return Number(kb) / 1024
}

describe("stop 25: nothing warm pack code writes on its pack process's channel stops the front", () => {
  for (const [tool, what] of [
    ['warm-channel-garbage', 'what is no message'],
    ['warm-channel-flood', '128 MiB with no end of message'],
  ] as const) {
    it(`under none, a network-none tool that writes ${what} on its process's channel ends at most that process; the front holds no more than the bound and serves on`, async () => {
      await withHost({}, async (host) => {
        const before = frontPeakMB(host)
        // In a pack process of its own: abort-victim's group is not network-none.
        const attack = await attackBesideVictim(host, tool)
        expect.soft('error' in attack, "the attack's call was answered").toBe(false)
        // At most one bounded line (16 MiB) held for the process, and what reading it costs.
        expect.soft(frontPeakMB(host) - before, "MB the front's peak grew by").toBeLessThan(64)
        await stillServes(host)
      })
    })
  }
})

describe('stop 25: an answer too large for the channel fails its own call alone', () => {
  it("under none, an answer of 48 MiB answers handler-throw saying so, and another tenant's call in the same pack process answers ok", async () => {
    await withHost({}, async (host) => {
      // abort-victim and big-answer are one group: one pack process.
      const attack = await attackBesideVictim(host, 'big-answer')
      expect
        .soft('error' in attack ? attack : attack.body, "the big answer's call")
        .toMatchObject({ v: 2, kind: 'error', code: 'handler-throw', toolId: 'big-answer' })
      if (!('error' in attack))
        expect.soft(String(attack.body?.message), 'the message').toMatch(/AnswerTooLarge: its answer is 48\.0 MiB .* over the 15\.9 MiB an answer may be/)
      expect
        .soft(
          host.lines.filter((l) => l.kind === 'worker-replaced'),
          'pack processes replaced',
        )
        .toEqual([])
      await stillServes(host)
    })
  })
})

describe('stop 24: what a strict process leaves unread is its own to hold', () => {
  it('under strict, a process that pauses its stdin while file replies come is killed past 64 MiB, and the service serves on', async () => {
    const token = 'hoard-file-token'
    const store = await startFakeFileStore(token)
    try {
      await withHost({ env: STRICT }, async (host) => {
        const ctx = { tenantId: 'tenant-a', runId: 'attack', idempotencyKey: 'hoard-1', toolFiles: { url: store.url, token } }
        const attack = await rawInvoke(host.port, 'stdin-hoard', { ms: 3000 }, ctx, 20_000)
        // Before, it answered ok, the replies held by the spawner until the process was killed.
        expect
          .soft('error' in attack ? attack : attack.body, "the attack's answer")
          .toMatchObject({ v: 2, kind: 'error', code: 'handler-throw', toolId: 'stdin-hoard' })
        if (!('error' in attack)) expect.soft(String(attack.body?.message), 'the message').toContain('killed for its channel')
        await stillServes(host)
      })
    } finally {
      await store.close()
    }
  })
})

/** Whether anything listens on 127.0.0.1:`port`. */
function listening(port: number): Promise<boolean> {
  return new Promise((resolve) => {
    const socket = connect(port, '127.0.0.1')
    socket.once('connect', () => {
      socket.destroy()
      resolve(true)
    })
    socket.once('error', () => resolve(false))
  })
}

describe('stop 24: SIGUSR1 opens no inspector in any process of the host', () => {
  for (const posture of ['strict', 'none'] as const) {
    it(`under ${posture}, pack code's process._kill of its parent is refused`, async () => {
      await withHost({ env: posture === 'strict' ? STRICT : {} }, async (host) => {
        const res = await rawInvoke(host.port, 'signal-parent', { signal: 10 }, { tenantId: 'tenant-a', runId: 'attack' })
        expect.soft('error' in res ? res : res.body, "the attack's answer").toMatchObject({ kind: 'result', output: { refused: 'ERR_PACK_SIGNAL_DENIED' } })
        await stillServes(host)
      })
    })
  }
  it('SIGUSR1 sent to the front, the spawner and every pack process (as any process of the same user can) opens no inspector', async () => {
    await withHost({ env: STRICT }, async (host) => {
      // A strict call first: the spawner exists once one has run.
      await rawInvoke(host.port, 'echo', {}, { tenantId: 'tenant-a', runId: 'r' })
      expect(await listening(9229), 'an inspector before the signals').toBe(false)
      const tree = processTree(host.proc.pid as number).filter((pid) => /node/.test(cmdline(pid)))
      expect(tree.length).toBeGreaterThanOrEqual(2)
      for (const pid of tree) {
        try {
          process.kill(pid, 'SIGUSR1')
        } catch (err) {
          // A strict call's process killed as it answered, between the listing and the signal: gone, it opens nothing.
          if ((err as NodeJS.ErrnoException).code !== 'ESRCH') throw err
        }
      }
      await sleep(500)
      expect.soft(await listening(9229), 'an inspector on 127.0.0.1:9229 after SIGUSR1').toBe(false)
      await stillServes(host)
    })
  })
})
