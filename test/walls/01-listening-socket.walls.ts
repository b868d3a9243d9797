// Finding 1: pack code took over the service's listening socket. It found the fd (the socket
// whose read fails ENOTCONN), wrapped it with net._createServerHandle and accepted the
// runtime's connections itself: it read the token and other tenants' secrets and answered
// with fs.writeSync. Also from module top-level code in a pre-warmed strict spare, no call.
import { describe, expect, it } from 'vitest'
import { FIXTURES, sleep, TOKEN, type Host } from '../helpers/host.js'
import { healthz, listens, rawInvoke, STRICT, stillServes, withHost, type RawAnswer } from './walls-helpers.js'

const SECRET = 'tenant-b-secret-for-finding-1'

/** Twenty callers on fresh connections, one after the other: health probes and invokes carrying a secret. */
async function victims(host: Host, tool: string): Promise<RawAnswer[]> {
  const answers: RawAnswer[] = []
  for (let i = 0; i < 20; i++) {
    answers.push(
      i % 2 === 0
        ? await healthz(host.port)
        : await rawInvoke(host.port, tool, { i }, { tenantId: 'tenant-b', runId: `r-${i}`, secrets: { apiKey: SECRET } }, 5_000),
    )
  }
  return answers
}

function expectAnsweredByHost(answers: RawAnswer[], tool: string, output: (i: number) => unknown): void {
  answers.forEach((answer, i) => {
    const expected = i % 2 === 0 ? { status: 'ok' } : { v: 2, kind: 'result', output: output(i) }
    expect.soft('error' in answer ? answer : answer.body, `caller ${i} (${tool})`).toEqual(expected)
  })
}

describe("finding 1: pack code cannot accept connections on the service's listening socket", () => {
  it("under strict, a call that wraps the listening fd gets none of the runtime's connections; /healthz answers and the port still listens", async () => {
    await withHost({ env: STRICT }, async (host) => {
      // A deadline near the attack's length: its scan of fds blocks on reading its own channel, so
      // the call ends at its deadline, not when the attack does.
      const attack = rawInvoke(host.port, 'steal-listener', { ms: 1500 }, { tenantId: 'tenant-a', runId: 'attack' }, 4_000)
      await sleep(400)
      const answers = await victims(host, 'echo')
      const attacked = await attack
      // Whatever the attack call itself answered, it must have captured nothing.
      const captured: string[] = 'error' in attacked ? [] : (attacked.body?.output?.captured ?? [])
      expect
        .soft(
          captured.some((c) => c.includes(TOKEN)),
          'the attack read the service token',
        )
        .toBe(false)
      expect
        .soft(
          captured.some((c) => c.includes(SECRET)),
          "the attack read another tenant's secret",
        )
        .toBe(false)
      expectAnsweredByHost(answers, 'echo', (i) => ({ input: { i }, tenantId: 'tenant-b' }))
      await sleep(300) // the attacker's worker is gone: its handle (and today the fd) with it
      await stillServes(host)
    })
  })

  it('under strict, module top-level code in a pre-warmed spare, with no call running, gets none of them', async () => {
    await withHost({ env: STRICT, index: `${FIXTURES}/walls-spare-listener-pack/index.json` }, async (host) => {
      await sleep(500) // the spare polls every 20 ms for the listening socket
      const answers = await victims(host, 'steal-at-load')
      expectAnsweredByHost(answers, 'steal-at-load', (i) => ({ input: { i } }))
      expect.soft(await healthz(host.port), '/healthz afterwards').toMatchObject({ status: 200, body: { status: 'ok' } })
      expect.soft(await listens(host.port), 'the port still listens').toBe(true)
    })
  })
})
