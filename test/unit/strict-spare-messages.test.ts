// What the front sends a strict call's process (src/pool/strict-group.ts), watched on its way to
// real strict processes through the spawner: under the production posture every tool of a pack
// is strict, and a spare started for every call must not carry every tool with it.
import { join } from 'node:path'
import { fileURLToPath } from 'node:url'
import { afterAll, describe, expect, it, vi } from 'vitest'
import { rootIdentity } from '../../dist/src/pool/call-tmp.js'
import type { CallTmp } from '../../src/pool/call-tmp.js'
import type { WorkerGroup } from '../../src/pool/group.js'
import type { RunnableEntry } from '../../src/protocol/runnable-entry.js'
import { toolEntry } from '../helpers/entries.js'
import { tempDirs } from '../helpers/temp-dir.js'

/** Every message the front sends to a process it started through the spawner, as JSON. */
const sent: string[] = []
vi.mock('../../dist/src/pool/spawner/spawner.js', async (original) => {
  const real = (await original()) as typeof import('../../src/pool/spawner/spawner.js')
  return {
    ...real,
    startProcess(...args: Parameters<typeof real.startProcess>) {
      // Its first message is written by the spawner as it starts.
      if (args[3]?.first !== undefined) sent.push(JSON.stringify(args[3].first))
      const process = real.startProcess(...args)
      return {
        ...process,
        send(message: unknown, options?: Parameters<typeof process.send>[1]) {
          sent.push(JSON.stringify(message))
          process.send(message, options)
        },
      }
    },
  }
})
const { createStrictGroup } = await import('../../dist/src/pool/strict-group.js')
const { createThreadBudget } = await import('../../dist/src/pool/thread-budget.js')

const REPO = fileURLToPath(new URL('../../', import.meta.url))
const PACK = fileURLToPath(new URL('../fixtures/basic-pack/', import.meta.url))
// Removed after the afterAll below has closed the groups.
const tempDir = tempDirs()
const root = tempDir('kindgi-strict-spare-')
const groups: WorkerGroup[] = []
afterAll(async () => {
  await Promise.all(groups.map((g) => g.close()))
})

let folders = 0
const callTmp: CallTmp = { root, reserve: () => ({ folder: join(root, `call-${folders++}`), root: rootIdentity(root) ?? '' }), close: async () => undefined }

/** A strict tool whose validators are as large as a real tool's: ~4 KB of code each. */
function tool(n: number): RunnableEntry {
  const entry = toolEntry(`echo-${n}`, PACK, { posture: 'strict', modulePath: 'tools/echo.js' })
  const code = `"use strict";module.exports = function validate(){return true};/*${'x'.repeat(4000)}*/`
  return { ...entry, validators: { input: code, output: code } }
}

function strictGroup(entries: RunnableEntry[]): WorkerGroup {
  const group = createStrictGroup({
    key: `strict-${entries.length}`,
    entries,
    env: {},
    memMB: undefined,
    maxThreads: 2,
    abortChannel: 'unused',
    onReplaced: () => undefined,
    onFileRequest: () => undefined,
    budget: createThreadBudget(2, () => []),
    readRoots: [REPO, PACK],
    callTmp,
  })
  groups.push(group)
  return group
}

/** The bytes sent to the processes of one call of `entries[0]`, and its answer's outcome. */
async function oneCall(entries: RunnableEntry[]): Promise<{ bytes: number; types: string[]; outcome: unknown }> {
  const group = strictGroup(entries)
  sent.length = 0
  const body = JSON.stringify({ v: 2, kind: 'invoke', tool: { id: entries[0]?.id }, input: { message: 'hi' }, ctx: { tenantId: 't', runId: 'r' } })
  const running = group.run({ type: 'call', callId: 1, key: (entries[0] as RunnableEntry).key, body, ids: {} })
  const answer = await running.answer
  await running.freed
  // Spares started for the calls to come are sent their setup too: one spare's share is what one call costs.
  const setups = sent.filter((m) => m.startsWith('{"type":"setup"'))
  const calls = sent.filter((m) => m.startsWith('{"type":"call"'))
  return {
    bytes: (setups[0]?.length ?? 0) + (calls[0]?.length ?? 0),
    types: [...new Set(sent.map((m) => (JSON.parse(m) as { type: string }).type))].sort(),
    outcome: answer.kind === 'result' ? answer.result.outcome : answer.kind,
  }
}

describe('what a strict spare and its call are sent', () => {
  it('does not grow with the pack: a call in a group of 200 tools sends what a call in a group of one does', async () => {
    const one = await oneCall([tool(0)])
    const many = await oneCall(Array.from({ length: 200 }, (_, n) => tool(n)))
    expect(one.outcome).toBe('ok')
    expect(many.outcome).toBe('ok')
    expect(one.types).toEqual(['call', 'setup'])
    // The entry's own name differs by nothing in length: echo-0 in both.
    expect(many.bytes).toBe(one.bytes)
    // And the call carries its own tool's validators, ~8 KB, not 200 tools' 1.6 MB.
    expect(many.bytes).toBeLessThan(20_000)
  })
})
