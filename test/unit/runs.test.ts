// Calls that find every core taken wait behind a running call, in its worker's mailbox, and
// run one after the other on that worker (src/pool/piscina-group.ts, protocol/mailbox.ts).
// These are the promises that make that safe, with real worker threads (the built bundle) and
// one core in the thread budget, so that every call after the first waits behind it.
import { describe, expect, it } from 'vitest'
import { existsSync, mkdtempSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { fileURLToPath } from 'node:url'
import { warmGroup } from './warm-group.js'
import type { CallTask, RunnableEntry } from '../../src/protocol/worker-messages.js'

const PACK = fileURLToPath(new URL('../fixtures/basic-pack/', import.meta.url))
function entry(id: string): RunnableEntry {
  return {
    key: `tool:${id}@1.0.0`, target: 'tool', id, version: '1.0.0', modulePath: `tools/${id}.js`, absPath: join(PACK, `tools/${id}.js`),
    posture: 'none', networkNone: false, pauses: false, storesFiles: false, readsFiles: false,
  }
}
const FAULT_PACK = fileURLToPath(new URL('../fixtures/fault-pack/', import.meta.url))
// Leaves a rejection nobody handles: its worker dies mid-call through Piscina's error path.
const reject: RunnableEntry = { ...entry('reject'), absPath: join(FAULT_PACK, 'tools/reject.js') }
const entries = [...['echo', 'sleep', 'spin', 'exit', 'marker', 'busy'].map(entry), reject]
const { group, replaced } = warmGroup(entries, 1, 3)

let nextId = 1
function task(tool: string, input: unknown): CallTask {
  const body = JSON.stringify({ v: 2, kind: 'invoke', tool: { id: tool }, input, ctx: { tenantId: 't', runId: 'r' } })
  return { type: 'call', callId: nextId++, key: `tool:${tool}@1.0.0`, body, ids: {} }
}
const output = (value: unknown) => ({ kind: 'result', result: { outcome: 'ok', body: JSON.stringify({ v: 2, kind: 'result', output: value }) } })

describe('calls waiting behind a running call', () => {
  it('each get their own answer, in any order of arrival', async () => {
    expect(await group.probe()).toEqual([])
    const first = group.run(task('busy', { burnMs: 30 }))
    const behind = [1, 2, 3, 4, 5, 6].map((i) => group.run(task('echo', { i, text: 'é✓🚀'.repeat(i * 50) })))
    expect(await first.answer).toEqual(output({ burnedMs: 30 }))
    for (const [n, call] of behind.entries()) expect(await call.answer).toEqual(output({ i: n + 1, text: 'é✓🚀'.repeat((n + 1) * 50) }))
    await Promise.all(behind.map((c) => c.freed))
    expect(replaced).toEqual([])
  })

  it('run on another worker when the worker dies before reaching them; the call it ran answers that it died', async () => {
    replaced.length = 0
    const dying = group.run(task('exit', {}))
    const behind = [1, 2, 3].map((i) => group.run(task('echo', { i })))
    expect(await dying.answer).toMatchObject({ kind: 'died', reason: 'crash' })
    for (const [n, call] of behind.entries()) expect(await call.answer).toEqual(output({ i: n + 1 }))
    expect(replaced).toEqual(['crash'])
  })

  it('keep their own answers when the worker dies on a later call: only that call answers that it died', async () => {
    replaced.length = 0
    const first = group.run(task('busy', { burnMs: 30 }))
    const done = [1, 2].map((i) => group.run(task('echo', { i })))
    const dying = group.run(task('reject', {}))
    expect(await first.answer).toEqual(output({ burnedMs: 30 }))
    for (const [n, call] of done.entries()) expect(await call.answer).toEqual(output({ i: n + 1 }))
    expect(await dying.answer).toMatchObject({ kind: 'died', reason: 'crash', detail: 'nobody handles this rejection' })
    await Promise.all([first.freed, dying.freed, ...done.map((c) => c.freed)])
    expect(replaced).toEqual(['crash'])
  })

  it('are not terminated with a call stopped past its deadline: they run on another worker', async () => {
    replaced.length = 0
    const stuck = group.run(task('spin', {}))
    const behind = [1, 2, 3].map((i) => group.run(task('echo', { i })))
    stuck.stop('deadline')
    for (const [n, call] of behind.entries()) expect(await call.answer).toEqual(output({ i: n + 1 }))
    await stuck.freed
    expect(replaced).toEqual(['deadline'])
  })

  it('is taken back when the call ahead runs long, and runs on its own meanwhile', async () => {
    const slow = group.run(task('sleep', { ms: 1500 }))
    const quick = group.run(task('echo', { quick: true }))
    const first = await Promise.race([slow.answer.then(() => 'slow'), quick.answer.then(() => 'quick')])
    expect(first).toBe('quick')
    expect(await quick.answer).toEqual(output({ quick: true }))
    expect(await slow.answer).toEqual(output({ slept: 1500 }))
  })

  it('a waiting call whose caller leaves is freed at once and never reaches pack code', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'kindgi-runs-'))
    const slow = group.run(task('sleep', { ms: 300 }))
    const gone = group.run(task('marker', { path: join(dir, 'ran') }))
    gone.stop('cancelled')
    await gone.freed
    expect(await slow.answer).toEqual(output({ slept: 300 }))
    await group.run(task('echo', { after: true })).answer
    expect(existsSync(join(dir, 'ran'))).toBe(false)
  })
})
