// The front's side of a warm group's pack process (src/pool/pack-process-group.ts): one
// pending map per process, every call ends exactly once, a dead process answers its calls as
// exited and is replaced, and nothing a process says about a call it does not hold counts.
// Most promises are held against a stand-in process that misbehaves on request
// (test/fixtures/fake-pack-process/fake.mjs); the last ones against the real, built one.
import { fileURLToPath } from 'node:url'
import { afterAll, describe, expect, it } from 'vitest'
import { createPackProcessGroup } from '../../dist/src/pool/pack-process-group.js'
import { createThreadBudget } from '../../dist/src/pool/thread-budget.js'
import type { WorkerGroup } from '../../src/pool/group.js'
import type { GroupAnswer, ReplaceReason } from '../../src/protocol/call-answers.js'
import type { CallTask } from '../../src/protocol/worker-messages.js'
import type { RemoteFileRequest } from '../../src/pool/tool-files.js'
import type { RunnableEntry } from '../../src/protocol/runnable-entry.js'
import { toolEntry } from '../helpers/entries.js'
import { sleep } from '../helpers/host.js'

const FAKE = fileURLToPath(new URL('../fixtures/fake-pack-process/fake.mjs', import.meta.url))
const WALLS = fileURLToPath(new URL('../fixtures/walls-pack/', import.meta.url))
const budget = createThreadBudget(2, () => [])

const entry = (id: string) => toolEntry(id, WALLS)

type Made = { group: WorkerGroup; replaced: Array<[ReplaceReason, string | undefined]>; files: Array<RemoteFileRequest & { callId: number }> }
const made: WorkerGroup[] = []
afterAll(async () => {
  await Promise.all(made.map((g) => g.close()))
  budget.close()
})

function group(options: { real?: boolean; env?: Record<string, string>; entries?: RunnableEntry[] } = {}): Made {
  const replaced: Made['replaced'] = []
  const files: Array<RemoteFileRequest & { callId: number }> = []
  const g = createPackProcessGroup({
    key: 'none',
    entries: options.entries ?? [entry('echo')],
    env: { PATH: process.env.PATH ?? '', ...options.env },
    memMB: undefined,
    maxThreads: 4,
    minThreads: 1,
    workerThreads: 2,
    abortChannel: 'unused',
    budget,
    walls: { hidden: ['/proc'], keepModes: false },
    onReplaced: (reason, id) => replaced.push([reason, id]),
    onFileRequest: (callId, request, reply) => {
      files.push({ callId, ...request })
      void reply({ kind: 'ok', value: { file: 'f-1' } })
    },
    ...(options.real ? {} : { entry: FAKE }),
  })
  made.push(g)
  return { group: g, replaced, files }
}

let nextId = 1
function task(body: unknown, key = 'tool:echo@1.0.0'): CallTask {
  return { type: 'call', callId: nextId++, key, body: JSON.stringify(body), ids: {} }
}

const text = (answer: GroupAnswer) => (answer.kind === 'result' ? JSON.parse(answer.result.body) : answer)

describe('calls queued in one turn of the event loop cross the channel as one message', () => {
  it('three calls made together reach the process in one batch, and each gets its own answer', async () => {
    const { group: g } = group({ env: { FAKE_BATCH_LOG: '1' } })
    expect(await g.probe()).toEqual([])
    const runs = [1, 2, 3].map((i) => g.run(task({ text: `t${i}` })))
    const answers = await Promise.all(runs.map((r) => r.answer))
    expect(answers.map((a) => text(a).text)).toEqual(['t1@batch-of-3', 't2@batch-of-3', 't3@batch-of-3'])
    await Promise.all(runs.map((r) => r.freed))
  })
})

describe('a pack process that dies answers its calls in flight as exited and is replaced', () => {
  it('the dying call and a call beside it are answered "died", logged once as crash, and the next call runs in a new process', async () => {
    const { group: g, replaced } = group()
    expect(await g.probe()).toEqual([])
    const beside = g.run(task({ ms: 5_000 }))
    const dying = g.run(task({ do: 'die' }))
    expect(await dying.answer).toEqual({ kind: 'died', reason: 'crash', detail: 'code 7' })
    expect(await beside.answer).toEqual({ kind: 'died', reason: 'crash', detail: 'code 7' })
    await Promise.all([dying.freed, beside.freed])
    expect(replaced).toEqual([['crash', 'echo@1.0.0']])
    const first = text(await g.run(task({ text: 'after' })).answer)
    expect(first.text).toBe('after')
  })

  it('the real pack process ended by its pack code (a V8 trap) answers that call as exited; the group serves on', async () => {
    const { group: g, replaced } = group({ real: true, entries: [entry('echo'), entry('system-break')] })
    expect(await g.probe()).toEqual([])
    const killed = g.run(task({ v: 2, kind: 'invoke', tool: { id: 'system-break' }, input: {}, ctx: { tenantId: 't', runId: 'r' } }, 'tool:system-break@1.0.0'))
    expect(await killed.answer).toMatchObject({ kind: 'died', reason: 'crash', detail: expect.stringMatching(/^SIG[A-Z]+$/) })
    await killed.freed
    expect(replaced).toEqual([['crash', 'system-break@1.0.0']])
    const echo = await g.run(task({ v: 2, kind: 'invoke', tool: { id: 'echo' }, input: { after: 1 }, ctx: { tenantId: 't', runId: 'r' } })).answer
    expect(echo).toMatchObject({ kind: 'result', result: { outcome: 'ok' } })
  })
})

describe('a message naming a call of another process is ignored', () => {
  it("answers, frees and file requests one process sends for another process's call change nothing of it", async () => {
    const a = group()
    const b = group()
    expect(await a.group.probe()).toEqual([])
    expect(await b.group.probe()).toEqual([])
    const victim = b.group.run(task({ text: 'mine', ms: 300 }))
    const attack = a.group.run(task({ do: 'forge', ids: [nextId - 1, nextId + 5] }))
    expect(text(await attack.answer).text).toBe('echo')
    expect(text(await victim.answer).text).toBe('mine')
    expect(a.files).toEqual([])
  })
})

describe("a line the process's own code did not seal is pack code's writing: it is not read, and it ends the process", () => {
  it('answers, frees, file requests and replacement lines written without the seal change no call of the process, its own included, and log nothing but its end', async () => {
    const { group: g, files, replaced } = group()
    expect(await g.probe()).toEqual([])
    const victim = g.run(task({ text: 'mine', ms: 400 }))
    const attack = g.run(task({ do: 'unsealed', ids: [nextId - 1, nextId] }))
    expect(await attack.answer).toMatchObject({ kind: 'died', reason: 'crash' })
    expect(await victim.answer).toMatchObject({ kind: 'died', reason: 'crash' })
    await victim.freed
    expect(files).toEqual([])
    expect(replaced.map(([reason]) => reason)).toEqual(['crash'])
    // The group serves on in a new process.
    expect(text(await g.run(task({ text: 'next' })).answer).text).toBe('next')
  })
})

describe('every call ends exactly once', () => {
  it('a second answer and a second free for the same call are ignored', async () => {
    const { group: g } = group()
    const running = g.run(task({ do: 'twice' }))
    expect(text(await running.answer).text).toBe('first')
    await running.freed
    // The slot was freed once: a later call of the same process is served as usual.
    expect(text(await g.run(task({ text: 'next' })).answer).text).toBe('next')
  })

  it('a call freed without an answer is answered (the dispatcher had answered it already)', async () => {
    const { group: g } = group()
    const running = g.run(task({ do: 'free-only' }))
    expect(await running.answer).toMatchObject({ kind: 'died', reason: 'crash' })
    await running.freed
  })

  it('closing the group answers a call still pending as cut by the shutdown, not as a crash', async () => {
    const { group: g, replaced } = group()
    const hanging = g.run(task({ do: 'hang' }))
    await new Promise((resolve) => setTimeout(resolve, 100))
    await g.close()
    expect(await hanging.answer).toEqual({ kind: 'shutdown' })
    await hanging.freed
    expect(replaced).toEqual([])
  })
})

describe('a process ended because a stopped call was not freed is said to be ended for that call', () => {
  it("past the stop's grace its worker-replaced line names the stopped call and the stop's reason, not the call pending first", async () => {
    const { group: g, replaced } = group()
    expect(await g.probe()).toEqual([])
    const first = g.run(task({ text: 'slow', ms: 5000 }))
    const stuck = g.run(task({ do: 'hang' }, 'tool:stuck@2.0.0'))
    await sleep(100)
    stuck.stop('deadline')
    await stuck.freed
    expect(replaced).toEqual([['deadline', 'stuck@2.0.0']])
    expect(await first.answer).toMatchObject({ kind: 'died', reason: 'crash' })
  })
})

describe('a file request is made by the front only for a call pending in the process that asks', () => {
  it("the front makes its own call's request and the reply goes back to that process", async () => {
    const { group: g, files } = group()
    const running = g.run(task({ do: 'files' }))
    expect(JSON.parse(text(await running.answer).text)).toEqual({ kind: 'ok', value: { file: 'f-1' } })
    expect(files.map((f) => [f.callId, f.op])).toEqual([[nextId - 1, 'read']])
  })
})

describe('what a pack process says about itself is taken only as far as the host would say it', () => {
  it('a replacement line with an unknown reason is dropped, one naming no entry of the group is logged without the name', async () => {
    const { group: g, replaced } = group()
    expect(await g.probe()).toEqual([])
    const forged = g.run(task({ do: 'forge-replaced' }))
    await forged.freed
    expect(replaced).toEqual([['crash', undefined]])
  })
})
