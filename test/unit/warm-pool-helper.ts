// A warm pool (workers/warm-pool.ts: Piscina and the built pooled worker) in this process,
// for unit tests that need real worker threads; closed after the test file.
import { dirname } from 'node:path'
import { fileURLToPath } from 'node:url'
import { afterAll } from 'vitest'
import type { RunningCall } from '../../src/pool/group.js'
import { createWarmPool, type WarmPool } from '../../dist/workers/warm-pool.js'
import type { RunnableEntry } from '../../src/protocol/runnable-entry.js'
import { toolEntry } from '../helpers/entries.js'

const POOLED = fileURLToPath(new URL('../../dist/workers/bundled/pooled.js', import.meta.url))

/** `workerFile`: a stand-in for the pooled worker, for a test that needs a worker to behave a way pack code cannot make it. */
export function warmPool(entries: RunnableEntry[], cores: number, maxThreads: number, workerFile = POOLED): { pool: WarmPool; replaced: string[] } {
  const replaced: string[] = []
  const pool = createWarmPool({
    key: 'none',
    entries,
    env: {},
    memMB: undefined,
    maxThreads,
    minThreads: 1,
    workerThreads: cores,
    onReplaced: (reason) => replaced.push(reason),
    onFileRequest: () => undefined,
    workerFile,
  })
  afterAll(() => pool.close())
  return { pool, replaced }
}

const LINE = fileURLToPath(new URL('../fixtures/warm-lines/line.js', import.meta.url))

/** A warm pool of one tool, fixtures/warm-lines/line.js (its input says what it does), and a call of it with an input. */
export function linePool(cores: number, maxThreads: number): { pool: WarmPool; call: (input: object) => RunningCall } {
  const entry = toolEntry('line', dirname(LINE), { modulePath: 'line.js' })
  const { pool } = warmPool([entry], cores, maxThreads)
  let nextId = 1
  const call = (input: object) =>
    pool.run({
      type: 'call',
      callId: nextId++,
      key: entry.key,
      body: JSON.stringify({ v: 2, kind: 'invoke', tool: { id: 'line' }, input, ctx: { tenantId: 't', runId: 'r' } }),
      ids: {},
    })
  return { pool, call }
}
