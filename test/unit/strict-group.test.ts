// The strict group (src/pool/strict-group.ts) with real strict processes (the built bundle, its
// spawner) and a call-folder maker this test holds: a call stopped while its folder is being
// made never reaches its process; folders that cannot be made answer not-started without a
// process started and killed for each call.
import { mkdirSync, mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { fileURLToPath } from 'node:url'
import { afterAll, describe, expect, it } from 'vitest'
import { createStrictGroup } from '../../dist/src/pool/strict-group.js'
import { createThreadBudget } from '../../dist/src/pool/thread-budget.js'
import type { CallTmp } from '../../src/pool/call-tmp.js'
import type { ReplaceReason } from '../../src/protocol/call-answers.js'
import type { CallTask } from '../../src/protocol/worker-messages.js'
import { toolEntry } from '../helpers/entries.js'
import { sleep } from '../helpers/host.js'

const REPO = fileURLToPath(new URL('../../', import.meta.url))
const PACK = fileURLToPath(new URL('../fixtures/basic-pack/', import.meta.url))
const echo = toolEntry('echo', PACK, { posture: 'strict' })
const root = mkdtempSync(join(tmpdir(), 'kindgi-strict-group-'))
afterAll(() => rmSync(root, { recursive: true, force: true }))

/** A folder maker whose next `make` waits until the test says, and can be told to fail. */
function heldTmp(): CallTmp & { release(): void; failing: boolean } {
  let n = 0
  let held: Array<() => void> = []
  const tmp = {
    failing: false,
    reserve: () => join(root, `call-${n++}`),
    make(path: string) {
      return new Promise<{ kind: 'ok' } | { kind: 'error'; why: string }>((resolve) => {
        held.push(() => {
          if (tmp.failing) return resolve({ kind: 'error', why: 'its tmpDir could not be made: ENOSPC' })
          mkdirSync(path)
          resolve({ kind: 'ok' })
        })
      })
    },
    release() {
      const now = held
      held = []
      for (const go of now) go()
    },
    remove: (path: string) => rmSync(path, { recursive: true, force: true }),
    close: () => undefined,
  }
  return tmp
}

const tmp = heldTmp()
const replaced: ReplaceReason[] = []
const group = createStrictGroup({
  key: 'strict',
  entries: [echo],
  env: {},
  memMB: undefined,
  maxThreads: 4,
  abortChannel: 'unused',
  onReplaced: (reason: ReplaceReason) => replaced.push(reason),
  onFileRequest: () => undefined,
  budget: createThreadBudget(2, () => []),
  readRoots: [REPO, PACK],
  callTmp: tmp,
})
afterAll(() => group.close())

let nextId = 1
function task(input: unknown): CallTask {
  const body = JSON.stringify({ v: 2, kind: 'invoke', tool: { id: 'echo' }, input, ctx: { tenantId: 't', runId: 'r' } })
  return { type: 'call', callId: nextId++, key: echo.key, body, ids: {} }
}
const noAnswerWithin = (answer: Promise<unknown>, ms: number) => Promise.race([answer, sleep(ms).then(() => 'no answer')])

describe('a strict call stopped while its folder is being made', () => {
  it('is never sent to its process: the process is killed at once and the call has no answer', async () => {
    expect(await group.probe()).toEqual([])
    await sleep(300) // a spare ready and waiting
    replaced.length = 0
    const running = group.run(task({ message: 'never' }))
    await sleep(20)
    running.stop('deadline')
    tmp.release()
    await running.freed
    expect(await noAnswerWithin(running.answer, 300)).toBe('no answer')
    expect(replaced).toEqual(['deadline'])
  })
})

describe('strict calls whose folder cannot be made', () => {
  it('answer not-started, and no process is started or killed for them', async () => {
    await sleep(300)
    replaced.length = 0
    tmp.failing = true
    for (let i = 0; i < 5; i++) {
      const running = group.run(task({ message: 'never' }))
      await sleep(5)
      tmp.release()
      expect(await running.answer).toEqual({ kind: 'not-started', why: 'its tmpDir could not be made: ENOSPC' })
      await running.freed
    }
    expect(replaced).toEqual([])
    tmp.failing = false
    const ok = group.run(task({ message: 'after' }))
    await sleep(5)
    tmp.release()
    expect(await ok.answer).toMatchObject({ kind: 'result', result: { outcome: 'ok' } })
  })
})
