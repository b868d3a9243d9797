// Answer cells and the fast lane (src/protocol/answer-cell.ts, src/pool/fast-lane.ts): the
// early copy of an answer a lone call's front spins for, and when the front stops spinning.
import { describe, expect, it } from 'vitest'
import { Worker } from 'node:worker_threads'
import { awaitAnswerCell, CELL_BYTES, createAnswerCell, resetAnswerCell, writeAnswerCell } from '../../src/protocol/answer-cell.js'
import { createFastLane } from '../../src/pool/fast-lane.js'

describe('an answer cell', () => {
  it('carries an answer across exactly, whatever its characters', () => {
    const cell = createAnswerCell()
    const body = JSON.stringify({ v: 2, kind: 'result', output: { text: 'Relevé été 2026 ✓ 🚀', n: 1 } })
    writeAnswerCell(cell, { outcome: 'ok', body })
    expect(awaitAnswerCell(cell, 0)).toEqual({ outcome: 'ok', body })
    resetAnswerCell(cell)
    writeAnswerCell(cell, { outcome: 'handler-throw', body: '{"v":2,"kind":"error"}' })
    expect(awaitAnswerCell(cell, 0)).toEqual({ outcome: 'handler-throw', body: '{"v":2,"kind":"error"}' })
  })

  it('is declined for an answer that retires its worker or does not fit, so the front stops waiting at once', () => {
    const retiring = createAnswerCell()
    writeAnswerCell(retiring, { outcome: 'handler-throw', body: '{}', retire: 'failed' })
    const started = performance.now()
    expect(awaitAnswerCell(retiring, 1_000_000)).toBeUndefined()
    const big = createAnswerCell()
    writeAnswerCell(big, { outcome: 'ok', body: 'x'.repeat(CELL_BYTES) })
    expect(awaitAnswerCell(big, 1_000_000)).toBeUndefined()
    expect(performance.now() - started).toBeLessThan(500)
  })

  it('gives up after its budget when nothing is written', () => {
    const cell = createAnswerCell()
    const started = performance.now()
    expect(awaitAnswerCell(cell, 2000)).toBeUndefined()
    const tookMs = performance.now() - started
    expect(tookMs).toBeGreaterThanOrEqual(2)
  })

  it('is read by the front while the writer is another thread', async () => {
    const cell = createAnswerCell()
    const worker = new Worker(
      `const { workerData } = require('node:worker_threads')
       const header = new Int32Array(workerData, 0, 3)
       const bytes = Buffer.from(workerData, 16)
       const n = bytes.write('ok', 0, 'latin1'); const m = bytes.write('{"from":"worker"}', n, 'utf8')
       header[1] = n; header[2] = m; Atomics.store(header, 0, 1)`,
      { eval: true, workerData: cell },
    )
    let answer: ReturnType<typeof awaitAnswerCell>
    for (let i = 0; i < 200 && answer === undefined; i++) {
      answer = awaitAnswerCell(cell, 10_000)
      if (answer === undefined) await new Promise((r) => setTimeout(r, 10))
    }
    await worker.terminate()
    expect(answer).toEqual({ outcome: 'ok', body: '{"from":"worker"}' })
  })
})

describe('the fast lane', () => {
  it('stops offering cells to a tool whose answers missed the budget, for longer after each miss, and starts again after a hit', () => {
    const lane = createFastLane(0)
    const offered = (key: string) => lane.offer(key) !== undefined
    const miss = (key: string) => {
      const cell = lane.offer(key)
      expect(cell).toBeDefined()
      expect(lane.take(key, cell!)).toBeUndefined()
    }
    miss('slow')
    expect(offered('slow')).toBe(false) // skipped 1
    miss('slow')
    expect([offered('slow'), offered('slow')]).toEqual([false, false]) // skipped 2
    expect(offered('other')).toBe(true) // per tool
    const cell = lane.offer('slow')!
    writeAnswerCell(cell, { outcome: 'ok', body: '{}' })
    expect(lane.take('slow', cell)).toEqual({ outcome: 'ok', body: '{}' })
    miss('slow')
    expect(offered('slow')).toBe(false)
    expect(offered('slow')).toBe(true) // back to a single skip after the hit
  })

  it('hands out a reset cell: an answer left in a released cell never reaches the next call', () => {
    const lane = createFastLane(0)
    const cell = lane.offer('a')!
    writeAnswerCell(cell, { outcome: 'ok', body: '{"old":true}' })
    lane.release(cell)
    const again = lane.offer('a')!
    expect(again).toBe(cell)
    expect(lane.take('a', again)).toBeUndefined()
  })
})
