// A warm pool (workers/warm-pool.ts: Piscina and the built pooled worker) in this process,
// for unit tests that need real worker threads; closed after the test file.
import { fileURLToPath } from 'node:url'
import { afterAll } from 'vitest'
import { createWarmPool, type WarmPool } from '../../dist/workers/warm-pool.js'
import type { RunnableEntry } from '../../src/protocol/runnable-entry.js'

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
