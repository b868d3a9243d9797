// The strict group (src/pool/strict-group.ts) with real strict processes (the built bundle, its
// spawner): a call stopped before its process is ready never reaches it; a spare whose folder
// cannot be made never starts, and its call answers not-started without any process run for it.
import { writeFileSync } from 'node:fs'
import { join } from 'node:path'
import { fileURLToPath } from 'node:url'
import { describe, expect, it } from 'vitest'
import { createStrictGroup } from '../../dist/src/pool/strict-group.js'
import { createThreadBudget } from '../../dist/src/pool/thread-budget.js'
import { rootIdentity } from '../../dist/src/pool/call-tmp.js'
import type { CallTmp } from '../../src/pool/call-tmp.js'
import type { ReplaceReason } from '../../src/protocol/call-answers.js'
import type { CallTask } from '../../src/protocol/worker-messages.js'
import { toolEntry } from '../helpers/entries.js'
import { sleep } from '../helpers/host.js'
import { tempDirs } from '../helpers/temp-dir.js'

const REPO = fileURLToPath(new URL('../../', import.meta.url))
const PACK = fileURLToPath(new URL('../fixtures/basic-pack/', import.meta.url))
const echo = toolEntry('echo', PACK, { posture: 'strict' })
const tempDir = tempDirs()
const root = tempDir('kindgi-strict-group-')

/** Folder names under `root`; with `broken`, under a plain file, where no folder can be made. */
const notAFolder = join(root, 'not-a-folder')
writeFileSync(notAFolder, '')
let n = 0
/** With `replaced`, the root the spawner is told of is another folder than the one the path leads into (as after a swap). */
const elsewhere = tempDir('kindgi-strict-elsewhere-')
const tmp: CallTmp & { broken: boolean; replaced: boolean } = {
  root,
  broken: false,
  replaced: false,
  reserve: () => ({ folder: join(tmp.broken ? notAFolder : root, `call-${n++}`), root: rootIdentity(tmp.replaced ? elsewhere : root) ?? '' }),
  close: async () => undefined,
}

const replaced: ReplaceReason[] = []
function strictGroupOptions() {
  return {
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
  }
}
function strictGroup() {
  return createStrictGroup(strictGroupOptions())
}

let nextId = 1
function task(input: unknown): CallTask {
  const body = JSON.stringify({ v: 2, kind: 'invoke', tool: { id: 'echo' }, input, ctx: { tenantId: 't', runId: 'r' } })
  return { type: 'call', callId: nextId++, key: echo.key, body, ids: {} }
}
const noAnswerWithin = (answer: Promise<unknown>, ms: number) => Promise.race([answer, sleep(ms).then(() => 'no answer')])

describe('a strict call stopped before its process is ready', () => {
  it('is never sent to its process: the process is killed at once and the call has no answer', async () => {
    const group = strictGroup()
    try {
      replaced.length = 0
      // No spare yet (no probe): the call's process is being started when the stop comes.
      const running = group.run(task({ message: 'never' }))
      running.stop('deadline')
      await running.freed
      expect(await noAnswerWithin(running.answer, 300)).toBe('no answer')
      expect(replaced).toEqual(['deadline'])
    } finally {
      await group.close()
    }
  })
})

describe('strict calls whose folder was made elsewhere than in the root the service made', () => {
  it('answer not-started saying so, and no process is started for them (a warm tool had put its own folder in place of the root)', async () => {
    const group = strictGroup()
    try {
      replaced.length = 0
      tmp.replaced = true
      const running = group.run(task({ message: 'never' }))
      const answer = await running.answer
      expect(answer).toMatchObject({ kind: 'not-started' })
      expect((answer as { why: string }).why).toContain('its tmpDir was not made in the folder root the service made')
      await running.freed
      expect(replaced).toEqual([])
    } finally {
      tmp.replaced = false
      await group.close()
    }
  })
})

describe('strict calls whose folder cannot be made', () => {
  it('answer not-started saying why, and no process is started for them', async () => {
    const group = strictGroup()
    try {
      replaced.length = 0
      tmp.broken = true
      for (let i = 0; i < 3; i++) {
        const running = group.run(task({ message: 'never' }))
        const answer = await running.answer
        expect(answer).toMatchObject({ kind: 'not-started' })
        expect((answer as { why: string }).why).toMatch(/^its tmpDir could not be made: ENOTDIR/)
        await running.freed
      }
      // Nothing started, so nothing was replaced.
      expect(replaced).toEqual([])
      tmp.broken = false
      await sleep(300) // a spare with a folder that can be made
      // A loaded machine may not have one yet (a spare from before answers not-started): again
      // while so, up to 10 tries 200 ms apart.
      const again = async () => {
        const running = group.run(task({ message: 'after' }))
        const answer = await running.answer
        await running.freed
        return answer
      }
      let ok = await again()
      for (let i = 0; i < 10 && ok.kind === 'not-started'; i++) {
        await sleep(200)
        ok = await again()
      }
      expect(ok).toMatchObject({ kind: 'result', result: { outcome: 'ok' } })
    } finally {
      await group.close()
    }
  })
})

describe('a call run on a strict group that has closed', () => {
  it('answers shutdown, frees at once and takes no place in the thread budget', async () => {
    const budget = createThreadBudget(2, () => [])
    const group = createStrictGroup({ ...strictGroupOptions(), budget })
    await group.close()
    const running = group.run(task({ message: 'late' }))
    expect(await running.answer).toEqual({ kind: 'shutdown' })
    await running.freed
    expect(budget.running()).toBe(0)
    budget.close()
  })
})
