// Admission (src/pool/dispatcher.ts): the service's cap is one count for the process, and a
// slot a call ran on is freed by that call alone, when its worker is free.
import { fileURLToPath } from 'node:url'
import { describe, expect, it } from 'vitest'
import { createCap, createDispatcher } from '../../dist/src/pool/dispatcher.js'
import type { WorkerGroup } from '../../src/pool/group.js'
import type { ToolFiles } from '../../src/pool/tool-files.js'
import type { CallTask } from '../../src/protocol/worker-messages.js'
import { toolEntry } from '../helpers/entries.js'

const entry = toolEntry('echo', fileURLToPath(new URL('../fixtures/basic-pack/', import.meta.url)))
const task: CallTask = { type: 'call', callId: 1, key: entry.key, body: '{}', ids: {} }
const limits = { timeoutMs: 5000, onCallerGone: () => () => undefined }

/** A group whose one call answers at once and frees its worker only when `free` is called. */
function heldGroup(): { group: WorkerGroup; free(): void } {
  let free!: () => void
  const freed = new Promise<void>((resolve) => (free = resolve))
  const group = {
    run: () => ({ answer: Promise.resolve({ kind: 'result', result: { outcome: 'ok', body: '{}' } }), freed, stop: () => undefined }),
  } as unknown as WorkerGroup
  return { group, free }
}

describe('a slot a call ran on is freed by the call alone', () => {
  it("a release after the call started (its caller's failure) leaves the slot taken until the call's worker is free", async () => {
    const { group, free } = heldGroup()
    const dispatcher = createDispatcher(() => group, createCap(1), {} as ToolFiles)
    const slot = dispatcher.admit()
    expect(slot).toBeDefined()
    await slot?.run(entry, task, limits)
    slot?.release()
    expect(dispatcher.admit(), 'a second call while the first one holds its worker').toBeUndefined()
    free()
    await dispatcher.idle()
    expect(dispatcher.admit()).toBeDefined()
  })

  it('a release before any call ran gives the slot back', () => {
    const dispatcher = createDispatcher(() => heldGroup().group, createCap(1), {} as ToolFiles)
    dispatcher.admit()?.release()
    expect(dispatcher.admit()).toBeDefined()
  })
})

describe('a failure of our own before a call has an owner does not take its slot with it', () => {
  it('a group whose run throws: the throw reaches the caller, and the slot is free again', async () => {
    const group = {
      run: () => {
        throw new Error('a bug of ours')
      },
    } as unknown as WorkerGroup
    const dispatcher = createDispatcher(() => group, createCap(1), {} as ToolFiles)
    const slot = dispatcher.admit()
    await expect(slot?.run(entry, task, limits)).rejects.toThrow('a bug of ours')
    slot?.release()
    expect(dispatcher.admit(), 'the one slot, after the throw').toBeDefined()
  })

  it('a file grant that throws: the call is never run, and the slot is free again', async () => {
    let ran = 0
    const group = {
      run: () => {
        ran++
        return heldGroup().group.run({} as CallTask)
      },
    } as unknown as WorkerGroup
    const files = {
      grant: () => {
        throw new Error('no grant')
      },
    } as unknown as ToolFiles
    const dispatcher = createDispatcher(() => group, createCap(1), files)
    const slot = dispatcher.admit()
    await expect(slot?.run(entry, task, { ...limits, files: { url: 'http://127.0.0.1:1/files', token: 'file-token' } })).rejects.toThrow('no grant')
    expect(ran).toBe(0)
    expect(dispatcher.admit(), 'the one slot, after the throw').toBeDefined()
  })
})

describe("the cap is the process's, shared by the pools that count against it", () => {
  it('two dispatchers on one cap of 1 admit one call between them', () => {
    const cap = createCap(1)
    const a = createDispatcher(() => heldGroup().group, cap, {} as ToolFiles)
    const b = createDispatcher(() => heldGroup().group, cap, {} as ToolFiles)
    const slot = a.admit()
    expect(slot).toBeDefined()
    expect(b.admit()).toBeUndefined()
    slot?.release()
    expect(b.admit()).toBeDefined()
  })
})
