// Part of `npm run soak`, not of `npm test`: a call waiting behind another on a warm worker
// that ends the worker the moment it starts (process.exit) must not take the answer of the call
// ahead with it, over many rounds on a quiet event loop (test/unit/warm-pool-answer-ahead.test.ts
// holds the same promise on a busy one). workers/pooled.ts starts the next call only once
// Piscina has posted the answer ahead, and the worker's exit waits until the pack process has
// read it (workers/shared-memory/turn.ts). Before the first, the call ahead lost its answer in
// 269 of 300 rounds; before the second, 0 to 3 (Node 24), 2 (Node 26). The second case: a taken
// turn says the call ran, and it is never run again.
import { describe, expect, it } from 'vitest'
import { join } from 'node:path'
import { tempDirs } from '../helpers/temp-dir.js'
import { linePool } from '../unit/warm-pool-helper.js'

const ROUNDS = 300
// Removed after the pool below is closed.
const tempDir = tempDirs()
// One core: the second call of each round waits behind the first, on its worker.
const { call } = linePool(1, 3)

describe('a call behind another that ends its worker the moment it starts', () => {
  it(`never takes the answer of the call ahead (${ROUNDS} rounds)`, async () => {
    // The tool's calls are known to be short: only such calls have others wait behind them.
    for (let i = 0; i < 5; i++) await call({}).answer
    let lost = 0
    for (let i = 0; i < ROUNDS; i++) {
      const ahead = call({})
      const dying = call({ exit: true })
      const got = (await ahead.answer) as { kind: string }
      if (got.kind !== 'result') lost++
      await dying.answer
      await call({}).answer
    }
    console.info(`answer-ahead soak: the call ahead lost its answer in ${lost} of ${ROUNDS} rounds`)
    expect(lost).toBe(0)
  })

  it(`never runs a call twice that ran behind another when the call after it ends the worker (${ROUNDS} rounds)`, async () => {
    // [first, second, dying] on one worker: the second takes its turn and runs, and the worker
    // dies before its answer is read. It ran: it must be answered as died, never run again.
    const dir = tempDir('kindgi-twice-')
    let twice = 0
    for (let i = 0; i < ROUNDS; i++) {
      const first = call({})
      const second = call({ marker: join(dir, `ran-${i}`), once: true })
      const dying = call({ exit: true })
      const got = (await second.answer) as { kind: string; result?: { body: string } }
      if (got.kind === 'result' && got.result?.body.includes('this call ran twice')) twice++
      await Promise.all([first.answer, dying.answer])
    }
    console.info(`answer-ahead soak: a call behind another ran twice in ${twice} of ${ROUNDS} rounds`)
    expect(twice).toBe(0)
  })
})
