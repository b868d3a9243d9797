// A warm worker group (Piscina, the built worker bundle) with its own thread budget, for the
// unit tests that need real worker threads; closed after the test file.
import { afterAll } from 'vitest'
import type { Worker } from 'node:worker_threads'
import { createPiscinaGroup } from '../../dist/src/pool/piscina-group.js'
import { createThreadBudget } from '../../dist/src/pool/thread-budget.js'
import type { RunnableEntry } from '../../src/protocol/worker-messages.js'
import type { WorkerGroup } from '../../src/pool/group.js'

export function warmGroup(entries: RunnableEntry[], cores: number, maxThreads: number): { group: WorkerGroup; replaced: string[] } {
  const replaced: string[] = []
  let groupThreads: () => Worker[] = () => []
  const budget = createThreadBudget(cores, () => groupThreads())
  const group = createPiscinaGroup({
    key: 'none', entries, env: {}, memMB: undefined, maxThreads, minThreads: 1, abortChannel: `test-${process.pid}-${Math.random()}`,
    onReplaced: (reason) => replaced.push(reason), budget, onFileRequest: () => undefined,
  })
  groupThreads = group.threads
  afterAll(async () => {
    await group.close()
    budget.close()
  })
  return { group, replaced }
}
