// A call waiting behind another on a warm worker starts once the answer ahead is posted, not
// read; a call that then ends the worker at once (process.exit, or a throw no one catches) must
// not take that answer with it. Piscina, told that a worker exited, fails its unfinished tasks
// without reading what the worker posted last, so a worker that a call ends waits until the
// pack process has read it (workers/shared-memory/turn.ts, workers/pooled.ts). The race is lost
// most often while the pack process's main thread turns its event loop without sleeping, as it
// does around lone calls (workers/stay-awake.ts): this test turns it so. Before the wait, 29
// and 37 of 300 rounds lost the answer ahead to process.exit, on Node 24 and 26; to a throw, 6
// of 300 while only `exit` waited (Node ends a worker without `exit` when the stray-error
// listener rethrows the running call's error).
import { describe, expect, it } from 'vitest'
import { linePool } from './warm-pool-helper.js'

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
  // The tool's calls are known to be short: only such calls have others wait behind them.
  it('is known short first', async () => {
    for (let i = 0; i < 5; i++) expect(await call({}).answer).toMatchObject({ kind: 'result' })
  })

  // Rounds enough for the builds before to fail (each did, every time), and few enough to spare
  // the files beside this one: each round ends a worker and starts another.
  for (const [how, input, rounds] of [
    ['by process.exit', { exit: true }, 50],
    ['by a throw no one catches', { throwSoon: true }, 150],
  ] as const) {
    it(`${how}, leaves the call ahead its answer, in every one of ${rounds} rounds`, async () => {
      const lost: string[] = []
      for (let i = 0; i < rounds; i++) {
        const ahead = call({})
        const dying = call(input)
        turnUntil(ahead.answer)
        const got = (await ahead.answer) as { kind: string; detail?: string }
        if (got.kind !== 'result') lost.push(`${got.kind}: ${got.detail}`)
        expect(await dying.answer).toMatchObject({ kind: 'died' })
        await call({}).answer
      }
      expect(lost).toEqual([])
    })
  }
})
