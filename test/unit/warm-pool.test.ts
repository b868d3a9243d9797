// The warm pool's promises about one call, with real worker threads (the built bundle): each
// call gets its own answer, whatever happens to its worker and at which point of its life; a
// call stopped before it ran never reaches pack code; ids are any safe integer; an answer
// that took its time to be read is still the call's answer.
import { describe, expect, it } from 'vitest'
import { existsSync } from 'node:fs'
import { join } from 'node:path'
import { fileURLToPath } from 'node:url'
import { toolEntry } from '../helpers/entries.js'
import { tempDirs } from '../helpers/temp-dir.js'
import { warmPool } from './warm-pool-helper.js'
import type { CallTask } from '../../src/protocol/worker-messages.js'
import type { RunnableEntry } from '../../src/protocol/runnable-entry.js'

const PACK = fileURLToPath(new URL('../fixtures/basic-pack/', import.meta.url))
const entry = (id: string, extra: Partial<RunnableEntry> = {}) => toolEntry(id, PACK, extra)
const FAULT_PACK = fileURLToPath(new URL('../fixtures/fault-pack/', import.meta.url))
// Leaves a rejection nobody handles: its worker dies mid-call through Piscina's error path.
const reject: RunnableEntry = { ...entry('reject'), absPath: join(FAULT_PACK, 'tools/reject.js') }
// Fails inside its handler as a context-isolated tool: its worker must retire after answering.
const throwsIsolated: RunnableEntry = { ...entry('throws', { posture: 'context-isolated' }), key: 'tool:throws-isolated@1.0.0' }
// Say which worker ran them (and can wait, exit or leave a marker): for calls that wait behind
// another. One entry per test, as each keeps its own record of how long its calls take.
const LINE_TOOLS = ['line-a', 'line-b', 'line-c', 'line-d', 'line-e', 'line-f']
const lineTools = LINE_TOOLS.map((id) => ({ ...entry(id), absPath: fileURLToPath(new URL('../fixtures/warm-lines/line.js', import.meta.url)) }))
// Leaves its worker alive but failing every call after it before the call starts.
const breakRunner: RunnableEntry = { ...entry('break-runner'), absPath: fileURLToPath(new URL('../fixtures/warm-lines/break-runner.js', import.meta.url)) }
const entries = [...['echo', 'sleep', 'spin', 'exit', 'marker', 'busy'].map((id) => entry(id)), reject, throwsIsolated, breakRunner, ...lineTools]
// Folders for markers the calls that must not run would leave; removed after the pool is closed.
const tempDir = tempDirs()
// One core: every call after the first waits in the budget for the one before.
const { pool, replaced } = warmPool(entries, 1, 3)

let nextId = 1
function task(tool: string, input: unknown, callId = nextId++, key = `tool:${tool}@1.0.0`): CallTask {
  const body = JSON.stringify({ v: 2, kind: 'invoke', tool: { id: tool }, input, ctx: { tenantId: 't', runId: 'r' } })
  return { type: 'call', callId, key, body, ids: {} }
}
const output = (value: unknown) => ({ kind: 'result', result: { outcome: 'ok', body: JSON.stringify({ v: 2, kind: 'result', output: value }) } })

describe('calls queued behind a running call', () => {
  it('each get their own answer, in any order of arrival', async () => {
    expect(await pool.probe()).toEqual([])
    const first = pool.run(task('busy', { burnMs: 30 }))
    const queued = [1, 2, 3, 4, 5, 6].map((i) => pool.run(task('echo', { i, text: 'é✓🚀'.repeat(i * 50) })))
    expect(await first.answer).toEqual(output({ burnedMs: 30 }))
    for (const [n, call] of queued.entries()) expect(await call.answer).toEqual(output({ i: n + 1, text: 'é✓🚀'.repeat((n + 1) * 50) }))
    await Promise.all(queued.map((c) => c.freed))
    expect(replaced).toEqual([])
  })

  it('a queued call whose caller leaves is freed at once and never reaches pack code', async () => {
    const dir = tempDir('kindgi-warm-')
    // One core, and short calls may overlap up to two: two sleeps hold the budget.
    const slow = pool.run(task('sleep', { ms: 300 }))
    const slow2 = pool.run(task('sleep', { ms: 300 }))
    const gone = pool.run(task('marker', { path: join(dir, 'ran') }))
    gone.stop('cancelled')
    await gone.freed
    expect(await slow.answer).toEqual(output({ slept: 300 }))
    expect(await slow2.answer).toEqual(output({ slept: 300 }))
    await pool.run(task('echo', { after: true })).answer
    expect(existsSync(join(dir, 'ran'))).toBe(false)
  })
})

describe('a worker that ends at any point of a call', () => {
  it('mid-call by process.exit: that call answers that its worker died; the calls after it run on another', async () => {
    replaced.length = 0
    const dying = pool.run(task('exit', {}))
    const after = [1, 2, 3].map((i) => pool.run(task('echo', { i })))
    expect(await dying.answer).toMatchObject({ kind: 'died', reason: 'crash', detail: 'code 3' })
    for (const [n, call] of after.entries()) expect(await call.answer).toEqual(output({ i: n + 1 }))
    expect(replaced).toEqual(['crash'])
  })

  it('mid-call by a rejection nobody handles: only that call answers that it died', async () => {
    replaced.length = 0
    const first = pool.run(task('busy', { burnMs: 30 }))
    const dying = pool.run(task('reject', {}))
    const after = pool.run(task('echo', { after: true }))
    expect(await first.answer).toEqual(output({ burnedMs: 30 }))
    expect(await dying.answer).toMatchObject({ kind: 'died', reason: 'crash', detail: 'nobody handles this rejection' })
    expect(await after.answer).toEqual(output({ after: true }))
    expect(replaced).toEqual(['crash'])
  })

  it('left alive but failing every call before it starts (pack code broke its runner): it is ended and replaced, and the next call runs on another worker at once', async () => {
    replaced.length = 0
    await pool.run(task('break-runner', {})).answer
    const started = Date.now()
    expect(await pool.run(task('echo', { after: 'broken' })).answer).toEqual(output({ after: 'broken' }))
    expect(Date.now() - started).toBeLessThan(2000)
    expect(replaced).toContain('crash')
  })

  it("terminated past a deadline's grace: the calls queued after it are untouched", async () => {
    replaced.length = 0
    const stuck = pool.run(task('spin', {}))
    const after = [1, 2, 3].map((i) => pool.run(task('echo', { i })))
    await new Promise((r) => setTimeout(r, 50))
    stuck.stop('deadline')
    await stuck.freed
    expect(await stuck.answer).toMatchObject({ kind: 'died', reason: 'crash' })
    for (const [n, call] of after.entries()) expect(await call.answer).toEqual(output({ i: n + 1 }))
    expect(replaced).toEqual(['deadline'])
  })

  it('retired after its call answered (context-isolated, a failure): the answer stands, and the next call runs on a fresh worker', async () => {
    replaced.length = 0
    const failing = pool.run(task('throws', {}, nextId++, throwsIsolated.key))
    const after = [1, 2, 3].map((i) => pool.run(task('echo', { i })))
    expect(await failing.answer).toMatchObject({ kind: 'result', result: { outcome: 'handler-throw' } })
    for (const [n, call] of after.entries()) expect(await call.answer).toEqual(output({ i: n + 1 }))
    await failing.freed
    expect(replaced).toEqual(['context-isolated'])
  })
})

describe('calls that come one at a time', () => {
  it('leave nothing awake once they stop coming: an idle pool takes no CPU', async () => {
    // A long run of lone calls: the pack process's thread (here, this one) stays awake around them (stay-awake.ts).
    for (let i = 0; i < 40; i++) await pool.run(task('echo', { i })).answer
    await new Promise((resolve) => setTimeout(resolve, 50))
    const before = process.cpuUsage()
    await new Promise((resolve) => setTimeout(resolve, 300))
    const used = process.cpuUsage(before)
    // A thread left turning would take the whole 300 ms.
    expect((used.user + used.system) / 1000).toBeLessThan(60)
  })
})

describe('call ids', () => {
  it('any safe integer is a call id: ids past 2^31 and near 2^53 each get their own answer', async () => {
    const ids = [2 ** 31 - 2, 2 ** 31 - 1, 2 ** 31, 2 ** 31 + 1, 2 ** 32 + 5, Number.MAX_SAFE_INTEGER - 1, Number.MAX_SAFE_INTEGER]
    const first = pool.run(task('busy', { burnMs: 20 }))
    const calls = ids.map((id) => pool.run(task('echo', { id }, id)))
    await first.answer
    for (const [n, call] of calls.entries()) expect(await call.answer).toEqual(output({ id: ids[n] }))
    await Promise.all(calls.map((c) => c.freed))
  })
})

describe('an answer read late', () => {
  it('a call whose answer waited while this thread was blocked for 1.5 s is answered ok, not as lost', async () => {
    const call = pool.run(task('sleep', { ms: 20 }))
    const until = Date.now() + 1_500
    while (Date.now() < until) {
      // This thread is the pack process's main thread here: starved, as a loaded process can be.
    }
    expect(await call.answer).toEqual(output({ slept: 20 }))
  })
})

describe('a call waiting behind a short one on its worker', () => {
  const threadOf = async (call: { answer: Promise<unknown> }) => {
    const answer = (await call.answer) as { kind: string; result?: { body: string } }
    expect(answer).toMatchObject({ kind: 'result', result: { outcome: 'ok' } })
    return (JSON.parse(answer.result!.body) as { output: { threadId: number } }).output.threadId
  }
  // The tool's calls are known to be short: only such calls have others wait behind them.
  const warmUp = async (tool: string) => {
    for (let i = 0; i < 5; i++) await threadOf(pool.run(task(tool, {})))
  }

  it('runs on the worker of the one ahead, after it, each with its own answer', async () => {
    // It lines up only behind a young, short call (timing, on a loaded machine): the promise is
    // kept in any one of five tries where it did.
    let kept = false
    for (let attempt = 0; attempt < 5 && !kept; attempt++) {
      await warmUp('line-a')
      const ahead = pool.run(task('line-a', {}))
      const behind = pool.run(task('line-a', {}))
      kept = (await threadOf(behind)) === (await threadOf(ahead))
    }
    expect(kept, 'ran on the worker of the one ahead, in one of 5 tries').toBe(true)
  })

  it('runs on another worker when the one ahead ends its worker: it had not run', async () => {
    await warmUp('line-b')
    replaced.length = 0
    const dying = pool.run(task('line-b', { exit: true }))
    const behind = pool.run(task('line-b', {}))
    expect(await dying.answer).toMatchObject({ kind: 'died', reason: 'crash', detail: 'code 3' })
    expect(await threadOf(behind)).toBeGreaterThan(0)
    expect(replaced).toEqual(['crash'])
  })

  it('never runs when stopped while it waits: it is freed, and answers that it was stopped before it ran', async () => {
    await warmUp('line-c')
    const dir = tempDir('kindgi-warm-')
    const ahead = pool.run(task('line-c', { ms: 100 }))
    const behind = pool.run(task('line-c', { marker: join(dir, 'ran') }))
    behind.stop('cancelled')
    expect(await behind.answer).toMatchObject({ kind: 'died', detail: 'it was stopped before it ran' })
    await behind.freed
    await threadOf(ahead)
    expect(existsSync(join(dir, 'ran'))).toBe(false)
  })

  it('never runs when stopped while the one ahead holds their worker in synchronous code: it is freed before that one answers', async () => {
    await warmUp('line-f')
    const dir = tempDir('kindgi-warm-')
    const ahead = pool.run(task('line-f', { burnMs: 1000 }))
    const behind = pool.run(task('line-f', { marker: join(dir, 'ran') }))
    // Held here, not waited on a timer: the stop must come before the one that takes a call
    // back after it waited a while (line-up.ts, BEHIND_MS), and by then the worker is in the
    // burn, reading no message.
    const until = performance.now() + 2
    while (performance.now() < until);
    behind.stop('deadline')
    const first = await Promise.race([ahead.answer.then(() => 'ahead'), behind.freed.then(() => 'behind')])
    expect(first).toBe('behind')
    expect(await behind.answer).toMatchObject({ kind: 'died', detail: 'it was stopped before it ran' })
    await threadOf(ahead)
    await pool.run(task('line-f', {})).answer
    expect(existsSync(join(dir, 'ran'))).toBe(false)
  })

  it('calls waiting in the budget while a line moves up each run once, with their own answer', async () => {
    // One core and lines of four: the first four line up, the rest wait in the budget and
    // join the line one by one as each call ahead of them starts. Whether they line up is timing
    // (a loaded machine may run them elsewhere), not what is checked here: up to five tries, to
    // see one where they all did, each checked in full.
    for (let attempt = 0; attempt < 5; attempt++) {
      await warmUp('line-e')
      replaced.length = 0
      const dir = tempDir('kindgi-warm-')
      const calls = Array.from({ length: 12 }, (_, i) => pool.run(task('line-e', { marker: join(dir, `ran-${i}`), once: true })))
      const threads = await Promise.all(calls.map(threadOf))
      await Promise.all(calls.map((c) => c.freed))
      for (let i = 0; i < 12; i++) expect(existsSync(join(dir, `ran-${i}`))).toBe(true)
      expect(replaced).toEqual([])
      if (new Set(threads).size === 1) break
    }
  })

  it('is withdrawn when the one ahead runs long, and runs on its own meanwhile', async () => {
    await warmUp('line-d')
    const slow = pool.run(task('line-d', { ms: 1500 }))
    const quick = pool.run(task('line-d', {}))
    const first = await Promise.race([slow.answer.then(() => 'slow'), quick.answer.then(() => 'quick')])
    expect(first).toBe('quick')
    expect(await threadOf(quick)).not.toBe(await threadOf(slow))
  })
})
