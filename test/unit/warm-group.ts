// A warm worker group (Piscina, the built worker bundle) with its own thread budget, for the
// unit tests that need real worker threads; closed after the test file.
import { afterAll } from 'vitest'
import { createPiscinaGroup } from '../../dist/src/pool/piscina-group.js'
import { createThreadBudget, type Holder } from '../../dist/src/pool/thread-budget.js'
import type { RunnableEntry } from '../../src/protocol/worker-messages.js'
import type { WorkerGroup } from '../../src/pool/group.js'

export function warmGroup(entries: RunnableEntry[], cores: number, maxThreads: number): { group: WorkerGroup; replaced: string[] } {
  const replaced: string[] = []
  let groupHolders: () => Holder[] = () => []
  const budget = createThreadBudget(cores, () => groupHolders())
  const group = createPiscinaGroup({
    key: 'none', entries, env: {}, memMB: undefined, maxThreads, minThreads: 1, abortChannel: `test-${process.pid}-${Math.random()}`,
    onReplaced: (reason) => replaced.push(reason), budget, onFileRequest: () => undefined,
  })
  groupHolders = group.holders
  afterAll(async () => {
    await group.close()
    budget.close()
  })
  return { group, replaced }
}
