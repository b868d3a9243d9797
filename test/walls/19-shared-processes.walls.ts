// Stop 29: what one strict call does to the processes every tenant shares (the spawner, the
// front, the log), found by a red-team pass after stop 28. Hostile tools in
// test/fixtures/walls-pack/ (tmp-lock, channel-objects, files-flood, log-glue).
//
// 1. tmp-lock: a strict call leaves a read-only sub-folder (with a file) in its ctx.tmpDir. The
//    spawner's removal of the call folder threw EACCES in the child's 'close' handler: the
//    spawner died with every strict call in flight, and the folder stayed on disk. It takes a
//    service without CAP_DAC_OVERRIDE (the image runs as 10001): under root the host runs with
//    every capability dropped (setpriv), which leaves root subject to the file modes.
// 2. channel-objects: one valid 15 MiB line on fd 3 made of 5 million `{}`. The spawner parsed
//    it and V8-serialized it, the front deserialized it, each on its one thread: seconds of both
//    event loops, ~1 GB in each, and another tenant's call missed its deadline.
// 3. files-flood: store requests written onto fd 3 without waiting for replies: the front
//    uploaded each at once and held its bytes until the store answered (60 of 9 MiB: 2.4 GB).
//    Nothing bounded how many.
// 4. log-glue: a strict process wrote half a line on the service's stderr, which it inherited;
//    the host's next line (its own call line) no longer parsed.
import { readFileSync } from 'node:fs'
import { describe, expect, it } from 'vitest'
import { MAX_FILE_REQUESTS_PER_CALL } from '../../src/pool/tool-files.js'
import { sleep, within } from '../helpers/host.js'
import { channelLineBesideEcho, fileStoreOn, peaks, NO_CAPABILITIES, rawInvoke, STRICT, stillServes, WALLS_INDEX, withHost } from './walls-helpers.js'

describe('stop 29: what one strict call does to the spawner, the front and the log', () => {
  it('tmp-lock: a strict call that leaves a read-only sub-folder in ctx.tmpDir kills no other call and leaves nothing behind', async () => {
    await withHost({ index: WALLS_INDEX, env: STRICT, command: NO_CAPABILITIES }, async (host) => {
      const victim = rawInvoke(host.port, 'abort-victim', { ms: 2000 }, { tenantId: 'tenant-b', runId: 'victim' })
      await sleep(300)
      const attack = await rawInvoke(host.port, 'tmp-lock', { bytes: 1024 * 1024 }, { tenantId: 'tenant-a', runId: 'attack' })
      const tmpDir = 'error' in attack ? undefined : (attack.body?.output?.tmpDir as string | undefined)
      expect.soft(tmpDir, "the attack's call answered its folder").toBeTypeOf('string')
      const answer = await victim
      expect.soft('error' in answer ? answer : answer.body, "tenant b's call in flight").toEqual({ v: 2, kind: 'result', output: { aborted: false } })
      const left = (): string[] | string => {
        try {
          return readFileSync(`${tmpDir}/locked/keep`).length > 0 ? ['locked/keep'] : []
        } catch {
          return 'gone'
        }
      }
      // Removed after the call, at the machine's pace; unwalled, it stays for good.
      await within(5000, () => left() === 'gone')
      expect.soft(left(), "the attack's folder after its call").toBe('gone')
      expect
        .soft(
          host.lines.filter((l) => l.kind === 'worker-replaced' && l.reason === 'crash'),
          'calls ended as crashes',
        )
        .toEqual([])
      await stillServes(host)
    })
  })

  it("objects-line: one 15 MiB line of tiny objects on fd 3 does not stall another tenant's call past its deadline, nor take the front or the spawner past 512 MB", async () => {
    await channelLineBesideEcho('channel-objects', 300)
  })

  it('files-flood: store requests written onto fd 3 without waiting reach the store at most four at a time, and the front holds well under 1 GB', async () => {
    // A store that takes 2 s to answer each upload (a busy store; it reads every body at once).
    let uploading = 0
    let mostAtOnce = 0
    const url = await fileStoreOn((req, res) => {
      uploading++
      mostAtOnce = Math.max(mostAtOnce, uploading)
      req.resume()
      req.on('end', () =>
        setTimeout(() => {
          uploading--
          res.writeHead(200, { 'content-type': 'application/json' })
          res.end(JSON.stringify({ file: { artifactId: 'a', name: 'n', type: 't', size: 1 } }))
        }, 2_000),
      )
    })
    await withHost({ index: WALLS_INDEX, env: STRICT }, async (host) => {
      const { front } = await peaks(host, () =>
        rawInvoke(
          host.port,
          'files-flood',
          { count: 30, holdMs: 1000 },
          { tenantId: 'tenant-a', runId: 'attack', idempotencyKey: 'k1', toolFiles: { url, token: 'tenant-a-own-file-token' } },
          20_000,
        ),
      )
      console.log(`files-flood: front peak ${Math.round(front)} MB, uploads at once ${mostAtOnce}`)
      // Past the bound a request answers busy; the rest is garbage the front has not collected yet.
      expect.soft(mostAtOnce, 'uploads in flight at once').toBeLessThanOrEqual(MAX_FILE_REQUESTS_PER_CALL)
      expect.soft(front, 'front peak RSS, MB').toBeLessThan(1024)
      await stillServes(host)
    })
  })

  it("log-glue: half a line on stderr from a strict call leaves the host's own log lines parseable, and pack code's output a line of its own", async () => {
    await withHost({ index: WALLS_INDEX, env: STRICT }, async (host) => {
      await rawInvoke(host.port, 'log-glue', {}, { tenantId: 'tenant-a', runId: 'attack' })
      await rawInvoke(host.port, 'echo', { after: 1 }, { tenantId: 'tenant-b', runId: 'after' })
      await host.waitFor('call', (l) => l.toolId === 'echo' && l.tenantId === 'tenant-b')
      const notJson = host.lines.filter((l) => l.kind === 'non-json').map((l) => String(l.raw))
      expect
        .soft(
          notJson.filter((raw) => raw.includes('"kind"')).map((raw) => raw.slice(0, 120)),
          'host lines glued to pack output',
        )
        .toEqual([])
      expect
        .soft(
          host.lines.some((l) => l.kind === 'call' && l.toolId === 'log-glue'),
          "the attack's own call line, parsed",
        )
        .toBe(true)
      // A record of its own since stop 40 (pack-records.ts): no line of the log is not JSON.
      expect.soft(notJson, 'lines of the log that are not JSON').toEqual([])
      expect
        .soft(
          host.lines.some((l) => l.kind === 'log' && l.message === 'x' && l.stream === 'stderr'),
          "pack code's half line, passed on as a log record of its own",
        )
        .toBe(true)
    })
  })
})
