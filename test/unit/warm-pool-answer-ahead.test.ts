import { describe, expect, it } from 'vitest'
import { linePool } from './warm-pool-helper.js'

const ROUNDS = 100
// One core: the second call of each round waits behind the first, on its worker.
const { call } = linePool(1, 3)

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
