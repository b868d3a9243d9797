// Finding 3: one line of pack code killed the whole service, in every posture:
// process._kill(process.pid, 9); a raw handle from net._createServerHandle misused, which
// trips a native assertion (abort); v8.setFlagsFromString('--allow-natives-syntax') then
// %SystemBreak() (a trap). Each ends the process that runs it: today that is the front.
import { describe, expect, it } from 'vitest'
import { rawInvoke, stillServes, wallsPackWith, withHost } from './walls-helpers.js'

const POSTURES = ['none', 'context-isolated', 'strict'] as const
const ATTACKS = [
  ['kill-raw', 'process._kill(process.pid, 9)'],
  ['handle-abort', 'a misused raw handle (native assertion)'],
  ['system-break', '%SystemBreak() after --allow-natives-syntax'],
] as const

describe('finding 3: no line of pack code ends the service', () => {
  for (const posture of POSTURES) {
    for (const [tool, what] of ATTACKS) {
      it(`under ${posture}, ${what} ends at most its own call: the call is answered by the host and the service serves on`, async () => {
        await withHost({ env: { KINDGI_PACK_SANDBOX: posture }, ...wallsPackWith([tool]) }, async (host) => {
          const answer = await rawInvoke(host.port, tool, {}, { tenantId: 'tenant-a', runId: 'attack' }, 5_000)
          expect.soft('error' in answer ? answer : answer.body, "the attack call's own answer").toMatchObject({ v: 2, kind: 'error', toolId: tool })
          await stillServes(host)
        })
      })
    }
  }
})
