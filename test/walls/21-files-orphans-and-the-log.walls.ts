// Stop 29, a third red-team pass: what one call does to the processes every tenant shares,
// past the bounds of 19-shared-processes and 20-bounds-left-open. Hostile tools in
// test/fixtures/walls-pack/ (files-name, warm-orphan, log-splice: out-flood.js under strict).
//
// 1. files-name: ctx.files.store (or read) with a tiny file and a name (an artifactId) of 5
//    million CJK characters, four in flight. The front URL-encodes it on its event loop (45 M
//    characters, ~0.3 s) and undici validates and writes it (~0.2 s more), per request: another
//    tenant's echo took 2.3-2.7 s, the front 475-751 MB (three such calls: 4-5.7 s, ~0.8 GB;
//    warm: 2.2 s, 1.1 GB). Nothing bounds the name, the content type or the id.
// 2. warm-orphan: a warm tool starts a detached shell holding the pack process's stdio, which
//    kills the pack process. The front ends a pack process on its 'close', which waits for
//    every pipe: the group has no process and every call to it passes its deadline, and SIGTERM
//    does not end the service, for as long as the orphan lives.
// 3. log-splice: a strict call floods its stderr (4 MiB/s, the per-pipe rate) while the log's
//    reader lags; the front's own buffered log lines (a flush of 8 KiB or more) are written past
//    PIPE_BUF in one write, which a full pipe splits: the spawner's pieces of pack output land
//    inside other tenants' call lines, which no longer parse.
// The pass's fourth finding (the half-read lines of many strict calls' 15 Mi-character lines of a
// CJK character take the spawner to ~0.8–0.9 GB) is a limit, written in docs/security.md.
import { describe, expect, it } from 'vitest'
import { BIN, sleep, within } from '../helpers/host.js'
import { fileStoreOn, peaks, rawInvoke, STRICT, stillServes, withHost } from './walls-helpers.js'

/** Tenant b's echo, every 50 ms for `ms`: its latencies, sorted, and the answers that were not right. */
async function victimLoop(port: number, ms: number): Promise<{ latencies: number[]; wrong: unknown[] }> {
  const latencies: number[] = []
  const wrong: unknown[] = []
  const started = performance.now()
  while (performance.now() - started < ms) {
    const t0 = performance.now()
    const answer = await rawInvoke(port, 'echo', { victim: 1 }, { tenantId: 'tenant-b', runId: 'victim' }, 5_000)
    latencies.push(performance.now() - t0)
    const body = 'error' in answer ? answer : answer.body
    if (JSON.stringify(body) !== JSON.stringify({ v: 2, kind: 'result', output: { input: { victim: 1 }, tenantId: 'tenant-b' } })) wrong.push(body)
    await sleep(50)
  }
  latencies.sort((a, b) => a - b)
  return { latencies, wrong }
}

describe('stop 29, third pass: what the second bounds left open', () => {
  // Written straight on the channel past the process's own code (strict: the front's bound is
  // the wall), and through ctx.files from a warm tool (its pack process refuses first).
  it.each([
    ['strict', 'store-raw'],
    ['strict', 'read-raw'],
    ['none', 'read'],
  ])(
    "files-name (%s, %s): a file request whose name is 5 million characters does not stall another tenant's call, nor take the front past 512 MB",
    async (posture, op) => {
      // A store as Node's HTTP server is: a header past 16 KiB answers 431 at once.
      const url = await fileStoreOn((req, res) => {
        req.resume()
        res.writeHead(404).end()
      })
      await withHost({ env: posture === 'strict' ? STRICT : {} }, async (host) => {
        await rawInvoke(host.port, 'echo', { warm: 1 })
        const { result, front } = await peaks(host, async () => {
          const attack = rawInvoke(
            host.port,
            'files-name',
            { op: op.replace('-raw', ''), raw: op.endsWith('-raw'), ms: 2500, chars: 5_000_000 },
            { tenantId: 'tenant-a', runId: 'attack', idempotencyKey: 'k1', toolFiles: { url, token: 'tenant-a-own-file-token' } },
            20_000,
          )
          await sleep(300)
          const victim = await victimLoop(host.port, 2000)
          return { victim, attack: await attack }
        })
        const { latencies, wrong } = result.victim
        const attackOut = 'error' in result.attack ? result.attack : result.attack.body?.output
        console.log(
          `files-name ${posture} ${op}: victim p50 ${Math.round(latencies[latencies.length >> 1] ?? 0)} ms, max ${Math.round(latencies.at(-1) ?? 0)} ms (${latencies.length} calls), front peak ${Math.round(front)} MB, attack ${JSON.stringify(attackOut).slice(0, 200)}`,
        )
        expect.soft(wrong, "tenant b's wrong answers").toEqual([])
        // Before the bounds, 2.3-2.7 s on a quiet machine; since, 0.1-0.4 s alone and 0.3-0.6 s in
        // CI runs on a loaded machine, once 1.53 s (stop 33: the walls run's first host, beside
        // file 18's CPU burners, 4 echoes in its 2 s): the bound is between, with room.
        expect.soft(latencies.at(-1), "tenant b's slowest echo, ms").toBeLessThan(2000)
        expect.soft(front, 'front peak RSS, MB').toBeLessThan(512)
        await stillServes(host)
      })
    },
    60_000,
  )

  it("warm-orphan: a warm tool's detached child that keeps its pack process's stdio open leaves neither the group without a process nor the service unable to stop", async () => {
    let orphan: number | undefined
    try {
      await withHost({}, async (host) => {
        for (let i = 0; i < 3; i++) await rawInvoke(host.port, 'echo', { warm: i })
        const attack = await rawInvoke(host.port, 'warm-orphan', { sec: 30 }, { tenantId: 'tenant-a', runId: 'attack' }, 5_000)
        orphan = 'error' in attack ? undefined : (attack.body?.output?.pid as number | undefined)
        await sleep(3_000)
        const t0 = performance.now()
        const victim = await rawInvoke(host.port, 'echo', { victim: 1 }, { tenantId: 'tenant-b', runId: 'victim' }, 5_000)
        const victimMs = performance.now() - t0
        const body = 'error' in victim ? victim : victim.body
        // SIGTERM: the service drains, closes its groups and exits.
        const s0 = performance.now()
        const code = await Promise.race([host.stop(), sleep(10_000).then(() => 'still running after 10 s')])
        const stopMs = performance.now() - s0
        console.log(
          `warm-orphan: victim 3 s after the attack ${Math.round(victimMs)} ms ${JSON.stringify(body).slice(0, 160)}; SIGTERM → ${code} after ${Math.round(stopMs)} ms`,
        )
        expect.soft(body, "tenant b's echo 3 s after the attack").toEqual({ v: 2, kind: 'result', output: { input: { victim: 1 }, tenantId: 'tenant-b' } })
        expect.soft(stopMs, 'ms from SIGTERM to the exit').toBeLessThan(8_000)
      })
    } finally {
      // The orphan left the host's tree (a session of its own): ended here, by the pid the attack gave.
      if (orphan !== undefined) {
        try {
          process.kill(orphan, 'SIGKILL')
        } catch {
          // gone
        }
      }
    }
  }, 60_000)

  it("log-splice: a strict call flooding its stderr while the log's reader lags leaves other tenants' call lines whole", async () => {
    // The service's stderr a pipe, as under a container runtime (a test host's is a socket pair).
    await withHost({ command: ['bash', '-c', 'exec 2> >(exec cat >&2); exec "$0" "$@"', process.execPath, BIN] }, async (host) => {
      for (let i = 0; i < 3; i++) await rawInvoke(host.port, 'echo', { warm: i })
      const stderr = host.proc.stderr!
      // The log's reader lags (a log shipper, a container runtime): it reads a quarter of the time.
      let lagging = true
      const lag = (async () => {
        while (lagging) {
          stderr.pause()
          await sleep(30)
          stderr.resume()
          await sleep(10)
        }
      })()
      const attack = rawInvoke(host.port, 'log-splice', { ms: 2500, mode: 'long' }, { tenantId: 'tenant-a', runId: 'attack' }, 20_000)
      await sleep(300)
      let calls = 0
      const started = performance.now()
      // Tenant b's warm calls, eight at a time: the front's log flushes 8 KiB and more at once.
      await Promise.all(
        Array.from({ length: 8 }, async (_, worker) => {
          while (performance.now() - started < 2000) {
            await rawInvoke(host.port, 'echo', { victim: worker }, { tenantId: 'tenant-b', runId: `victim-${calls++}` }, 5_000)
          }
        }),
      )
      await attack
      lagging = false
      await lag
      stderr.resume()
      // The lagging log drains at the machine's pace; a call line glued to pack output never parses.
      const victimLinesNow = () => host.lines.filter((l) => l.kind === 'call' && l.tenantId === 'tenant-b' && String(l.runId).startsWith('victim-')).length
      await within(10_000, () => victimLinesNow() >= calls)
      const notJson = host.lines.filter((l) => l.kind === 'non-json').map((l) => String(l.raw))
      const glued = notJson.filter((raw) => raw.includes('"kind"') || raw.includes('"level"') || /^[^x]/.test(raw))
      const victimLines = victimLinesNow()
      console.log(
        `log-splice: ${calls} victim calls, ${victimLines} of their call lines parsed, ${notJson.length} pack lines, ${glued.length} lines glued: ${glued
          .slice(0, 2)
          .map((g) => JSON.stringify(`${g.slice(0, 60)}…${g.slice(-60)}`))}`,
      )
      expect.soft(glued.length, 'host lines glued to pack output').toBe(0)
      expect.soft(victimLines, "tenant b's call lines that parse").toBe(calls)
    })
  }, 60_000)
})
