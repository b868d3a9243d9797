// Wire fuzzing (issue 8), the npm test part: ~2000 generated requests to two live hosts. Every
// answer is a protocol message or a transport status (never a 500), nothing crashes or hangs,
// no slot stays held, /healthz answers throughout. `npm run soak` runs far more.
import type fc from 'fast-check'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { fuzz, pollHealth, type HealthPoll, type Hosts } from './driver.js'
import { expectEverySlotFree, expectHealthyProcess, startFuzzHosts } from './fuzz-hosts.js'
import { fragmentedCase, halfBodyCase, headerCase, messageCase, pipelineCase, PINNED_TENANT, routeCase, type WireCase } from './generators.js'

const TIME_LIMIT_MS = 25_000
let hosts: Hosts
let pollers: Array<{ stop(): Promise<HealthPoll> }>
const made: Record<string, number> = {}

beforeAll(async () => {
  hosts = await startFuzzHosts()
  pollers = [pollHealth(hosts.plain), pollHealth(hosts.pinned)]
}, 60_000)
afterAll(async () => {
  await Promise.all([hosts?.plain.stop(), hosts?.pinned.stop()])
  console.info(`wire fuzzing: requests sent by kind ${JSON.stringify(made)}`)
})

async function expectAllKept(name: string, arb: fc.Arbitrary<WireCase>, numRuns: number): Promise<void> {
  const run = await fuzz(arb, hosts, { numRuns, timeLimitMs: TIME_LIMIT_MS })
  made[name] = run.tally.requests
  expect(run.failure).toBeUndefined()
  expect(run.tally.cases).toBeGreaterThan(0)
  expectHealthyProcess(hosts.plain)
  expectHealthyProcess(hosts.pinned)
}

describe('fuzzed protocol messages', () => {
  it('wrong types at every field, huge numbers, deep nesting, long strings, unicode, duplicate and __proto__ keys: always a 200 protocol message', async () => {
    await expectAllKept('messages', messageCase, 800)
  }, 60_000)
})

describe('fuzzed headers', () => {
  it('missing, duplicated, malformed, oversized and conflicting headers: a transport status or a protocol message, never a 500', async () => {
    await expectAllKept('headers', headerCase, 450)
  }, 60_000)
})

describe('every method on every route', () => {
  it('answers the route, method and token checks of docs/spec/CONTRACT.md §2 in order, on real and almost-real paths', async () => {
    await expectAllKept('routes', routeCase, 450)
  }, 60_000)
})

describe('connections carrying several requests', () => {
  it('pipelined and keep-alive requests are each answered once, in order', async () => {
    await expectAllKept('pipelined', pipelineCase, 120)
  }, 60_000)
  it('a request written in fragments is answered as if written whole', async () => {
    await expectAllKept('fragmented', fragmentedCase, 100)
  }, 60_000)
})

describe('bodies that stop half-way', () => {
  it('never leave a slot held: afterwards every slot of the cap takes a call', async () => {
    await expectAllKept('half-bodies', halfBodyCase, 120)
    await expectEverySlotFree(hosts.plain)
    await expectEverySlotFree(hosts.pinned, PINNED_TENANT)
  }, 60_000)
})

describe('throughout', () => {
  it('/healthz answered 200 {"status":"ok"} on every poll', async () => {
    for (const poller of pollers) {
      const health = await poller.stop()
      expect(health.failures).toEqual([])
      expect(health.polls).toBeGreaterThan(10)
    }
  })
})
