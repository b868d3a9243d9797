// Stop 36: a red-team pass on every posture, and a review of a call's life (hostile tools in
// test/fixtures/walls-pack/: forge-answer with fd3, files-req-echo). What each crossed before its wall:
//
// 1. forge-answer (walls 13, fd3): a warm worker wrote a batch of answers and frees straight on
//    its pack process's channel to the front (fd 3, shared by every thread of the process): the
//    front took them for the calls they named, another tenant's concurrent call of the same
//    tool included. The front now reads only batches that carry the secret it gave the
//    process's own code before any pack code loaded.
// 2. snoop-strict-root: a warm tool of a pack with strict tools set the strict calls' folder
//    root (its user's, mode 0300 so that no one lists it) back to 0700, listed it, read a
//    running strict call's files and overwrote them, in its own code (the warm permission
//    model granted writes there) or from a child process. The root is now hidden from warm
//    pack code, and the kernel refuses warm processes (and their children) any mode change by path.
// 3. root-swap: a warm tool renamed the strict root away and made a folder of its own in its
//    place (no mode change needed): the front made the next calls' folders in it, found by
//    their path, and the tool read and overwrote them. Now the front makes a new root when its
//    root is not what it made, and the spawner makes a call's folder only in that root.
// 4. conn-hog: a tool with network access opened connections to the service's own port and
//    held them, keep-alive: at KINDGI_PACK_MAX_CONNECTIONS every new connection of the runtime
//    was closed unanswered, /healthz (the image's health check) included, for as long as it
//    held them. A new connection now closes the oldest one that never carried the token.
// 5. files-req-echo: a strict process's file request whose request number was 15 MiB of text,
//    refused at once, came back whole in its reply; left unread, each such reply was held by
//    the spawner (24 calls: 1.4 GB). A request number is now a counter, or it is not answered.
import { rmSync } from 'node:fs'
import { describe, expect, it, onTestFinished } from 'vitest'
import { sleep } from '../helpers/host.js'
import { NO_CAPABILITIES, rawInvoke, STRICT, stillServes, wallsPackWith, withHost } from './walls-helpers.js'

describe("stop 36: a warm tool reaches no strict call's folder", () => {
  it.each([
    ['in its own code', false],
    ['from a child process', true],
  ])('snoop-strict-root (%s): the strict root stays unlistable, and the strict call reads back its own secret', async (_how, child) => {
    await withHost({ ...wallsPackWith(['snoop-strict-root', 'strict-keep']), command: NO_CAPABILITIES }, async (host) => {
      const victim = rawInvoke(host.port, 'strict-keep', { ms: 2500 }, { tenantId: 'tenant-b', runId: 'victim' })
      await sleep(800)
      const attack = await rawInvoke(host.port, 'snoop-strict-root', { child }, { tenantId: 'tenant-a', runId: 'attack' })
      const output = 'error' in attack ? undefined : attack.body?.output
      expect(output?.roots, `the attack found the strict root: ${JSON.stringify(attack).slice(0, 400)}`).toBeGreaterThan(0)
      expect.soft(output?.read, 'what the attack read').not.toContain('secret of tenant-b')
      const answer = await victim
      expect.soft('error' in answer ? answer : answer.body?.output, "the victim's answer").toEqual({ readBack: 'secret of tenant-b' })
      await stillServes(host)
    })
  })
})

describe("stop 36: a warm tool reaches no strict call's folder, whatever it puts in the root's place", () => {
  it('root-swap: with the root renamed away and a folder of its own in its place, later strict calls are not made in it, and their secrets stay theirs', async () => {
    await withHost({ ...wallsPackWith(['root-swap', 'strict-keep']), command: NO_CAPABILITIES }, async (host) => {
      const swap = await rawInvoke(host.port, 'root-swap', { action: 'swap' }, { tenantId: 'tenant-a', runId: 'attack' })
      const roots = ('error' in swap ? [] : (swap.body?.output?.swapped ?? [])) as string[]
      onTestFinished(() => {
        for (const root of roots) for (const path of [`/tmp/${root}`, `/tmp/${root}-moved`]) rmSync(path, { recursive: true, force: true })
      })
      expect(roots.length, `the attack swapped the root: ${JSON.stringify(swap).slice(0, 300)}`).toBeGreaterThan(0)
      // Spares made before the swap answer 503 (their folder is gone); later ones run. The
      // attack reads while each runs (its folder goes with its process).
      const answers = []
      const reads = []
      for (let i = 0; i < 4; i++) {
        const victim = rawInvoke(host.port, 'strict-keep', { ms: 1500 }, { tenantId: 'tenant-b', runId: `victim-${i}` })
        await sleep(700)
        const read = await rawInvoke(host.port, 'root-swap', { action: 'read', roots }, { tenantId: 'tenant-a', runId: 'attack' })
        reads.push('error' in read ? read : read.body?.output?.read)
        const answer = await victim
        answers.push('error' in answer ? answer : { status: answer.status, output: answer.body?.output })
      }
      expect.soft(JSON.stringify(reads), 'what the attack read').not.toContain('secret of tenant-b')
      expect.soft(answers, "the victim's later calls").toContainEqual({ status: 200, output: { readBack: 'secret of tenant-b' } })
      expect.soft(JSON.stringify(answers), "the victim's calls").not.toContain('overwritten')
      await stillServes(host)
    })
  })
})

describe("stop 36: pack code does not crowd the runtime out of the service's connections", () => {
  it("conn-hog: a strict tool holding more connections to the service's port than its bound leaves room for the runtime's calls and probes", async () => {
    await withHost({ ...wallsPackWith(['conn-hog']), env: { ...STRICT, KINDGI_PACK_MAX_CONNECTIONS: '40' } }, async (host) => {
      const attack = rawInvoke(host.port, 'conn-hog', { port: host.port, n: 60, ms: 4000 }, { tenantId: 'tenant-a', runId: 'attack' })
      await sleep(2000)
      const during = await rawInvoke(host.port, 'echo', { during: 'the attack' }, { tenantId: 'tenant-b', runId: 'victim' })
      expect.soft('error' in during ? during : during.status, "another tenant's call during the attack").toBe(200)
      const answer = await attack
      expect(
        'error' in answer ? answer : answer.body?.output?.answered,
        `the attack held its connections: ${JSON.stringify(answer).slice(0, 300)}`,
      ).toBeGreaterThanOrEqual(39)
      await stillServes(host)
    })
  })
})

describe('stop 36: what the front sends back to a pack process is its own', () => {
  it('files-req-echo: a strict file request whose number is 1 MiB of text gets no reply carrying it back', async () => {
    await withHost({ ...wallsPackWith(['files-req-echo']), env: STRICT }, async (host) => {
      const attack = await rawInvoke(host.port, 'files-req-echo', { kib: 1024, ms: 1500 }, { tenantId: 'tenant-a', runId: 'attack' })
      const output = 'error' in attack ? undefined : attack.body?.output
      expect(output?.sent, `the attack wrote its request: ${JSON.stringify(attack).slice(0, 300)}`).toBeGreaterThan(1024 * 1024)
      expect(output?.echoed, 'bytes the front sent back for it').toBeLessThan(1024)
      await stillServes(host)
    })
  })
})
