// A call waiting behind another on a warm worker starts once the answer ahead is posted, not
// read; a call that then ends the worker at once (process.exit) must not take that answer with
// it. Piscina, told that a worker exited, fails its unfinished tasks without reading what the
// worker posted last, so the worker's exit waits until the pack process has read it
// (workers/shared-memory/turn.ts). The race is lost most often while the pack process's main
// thread turns its event loop without sleeping, as it does around lone calls
// (workers/stay-awake.ts): this test turns it so. Before the wait, 29 and 37 of 300 rounds lost
// the answer ahead, on Node 24 and 26.
import { dirname } from 'node:path'
import { fileURLToPath } from 'node:url'
import { describe, expect, it } from 'vitest'
import { toolEntry } from '../helpers/entries.js'
import { warmPool } from './warm-pool-helper.js'

const LINE = fileURLToPath(new URL('../fixtures/warm-lines/line.js', import.meta.url))
const entry = toolEntry('line', dirname(LINE), { modulePath: 'line.js' })
const ROUNDS = 100
// One core: the second call of each round waits behind the first, on its worker.
const { pool } = warmPool([entry], 1, 3)

let nextId = 1
const call = (input: object) =>
  pool.run({
    type: 'call',
    callId: nextId++,
    key: entry.key,
    body: JSON.stringify({ v: 2, kind: 'invoke', tool: { id: 'line' }, input, ctx: { tenantId: 't', runId: 'r' } }),
    ids: {},
  })

/** Turns this thread's event loop without sleeping until `done` settles. */
function turnUntil(done: Promise<unknown>): void {
  let turning = true
  const turn = () => {
    if (turning) setImmediate(turn)
  }
  setImmediate(turn)
  void done.finally(() => (turning = false))
}

describe('a call behind another that ends its worker the moment it starts', () => {
  it(`leaves the call ahead its answer, in every one of ${ROUNDS} rounds`, async () => {
    // The tool's calls are known to be short: only such calls have others wait behind them.
    for (let i = 0; i < 5; i++) await call({}).answer
    const lost: string[] = []
    for (let i = 0; i < ROUNDS; i++) {
      const ahead = call({})
      const dying = call({ exit: true })
      turnUntil(ahead.answer)
      const got = (await ahead.answer) as { kind: string; detail?: string }
      if (got.kind !== 'result') lost.push(`${got.kind}: ${got.detail}`)
      expect(await dying.answer).toMatchObject({ kind: 'died' })
      await call({}).answer
    }
    expect(lost).toEqual([])
  })
})
