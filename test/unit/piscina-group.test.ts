// The warm group's fast lane with real worker threads (the built worker bundle): a call alone
// on the workers is answered from its answer cell before run() returns, and its slot is free
// with it; an answer that does not fit comes by message, intact.
import { describe, expect, it } from 'vitest'
import { join } from 'node:path'
import { fileURLToPath } from 'node:url'
import { warmGroup } from './warm-group.js'
import type { CallTask, RunnableEntry } from '../../src/protocol/worker-messages.js'

const PACK = fileURLToPath(new URL('../fixtures/basic-pack/', import.meta.url))
const echo: RunnableEntry = {
  key: 'tool:echo@1.0.0', target: 'tool', id: 'echo', version: '1.0.0', modulePath: 'tools/echo.js', absPath: join(PACK, 'tools/echo.js'),
  posture: 'none', networkNone: false, pauses: false, storesFiles: false, readsFiles: false,
}
const { group, replaced } = warmGroup([echo], 2, 2)

let nextId = 1
function task(input: unknown): CallTask {
  const body = JSON.stringify({ v: 2, kind: 'invoke', tool: { id: 'echo' }, input, ctx: { tenantId: 't', runId: 'r' } })
  return { type: 'call', callId: nextId++, key: echo.key, body, ids: {} }
}

/** 'now' when the promise had settled before this was called (its callbacks run first), else 'later'. */
function settledAlready(p: Promise<unknown>): Promise<'now' | 'later'> {
  return Promise.race([p.then(() => 'now' as const), Promise.resolve().then(() => 'later' as const)])
}

describe('a call alone on the worker threads', () => {
  it('is answered from shared memory before run() returns, and its slot is free with the answer', async () => {
    expect(await group.probe()).toEqual([])
    let early = 0
    let calls = 0
    // Spinning workers answer within the front's 300 µs budget nearly always on a quiet machine;
    // on a loaded one misses happen, and each puts the lane off for longer: keep calling a while.
    const until = performance.now() + 10_000
    while (early < 5 && performance.now() < until) {
      const i = calls++
      const running = group.run(task({ i }))
      const answered = await settledAlready(running.answer)
      const freed = await settledAlready(running.freed)
      const answer = await running.answer
      expect(answer).toEqual({ kind: 'result', result: { outcome: 'ok', body: JSON.stringify({ v: 2, kind: 'result', output: { i } }) } })
      if (answered === 'now') {
        early++
        expect(freed).toBe('now')
      }
      await running.freed
    }
    expect(early).toBe(5)
    expect(replaced).toEqual([])
  })

  it('an answer past the 16 KiB cell comes by message, intact, and the worker serves on', async () => {
    const text = 'é✓🚀'.repeat(8000)
    const running = group.run(task({ text }))
    expect(await settledAlready(running.answer)).toBe('later')
    expect(await running.answer).toEqual({ kind: 'result', result: { outcome: 'ok', body: JSON.stringify({ v: 2, kind: 'result', output: { text } }) } })
    await running.freed
    expect((await group.run(task({ after: true })).answer)).toMatchObject({ kind: 'result' })
  })
})
