// How a strict call's process ends (workers/strict-process.ts): once its last message is
// written it kills itself, so Node's own exit (its handlers, its teardown) never runs in a
// process that has nothing left to do. Driven here as its spawner drives it, without the
// spawner: setup on stdin, spare-ready on fd 3, then its call or the boot's probe.
import { type ChildProcess, spawn } from 'node:child_process'
import type { Readable } from 'node:stream'
import { fileURLToPath } from 'node:url'
import { afterEach, describe, expect, it } from 'vitest'
import type { RunnerTraits } from '../../src/protocol/runnable-entry.js'
import { toolEntry } from '../helpers/entries.js'

const PROCESS = fileURLToPath(new URL('../../dist/workers/bundled/strict-process.cjs', import.meta.url))
const PACK = fileURLToPath(new URL('../fixtures/basic-pack/', import.meta.url))
const TRAITS: RunnerTraits = { typescript: false, memoryWatch: false, networkGuard: false, strict: true }
const entry = toolEntry('echo', PACK, { posture: 'strict' })

const started: ChildProcess[] = []
afterEach(() => {
  for (const child of started.splice(0)) child.kill('SIGKILL')
})

type Ended = { code: number | null; signal: NodeJS.Signals | null }

/** A strict process with its channel: send a message, take the next one it wrote, and how it ended. */
function strictProcess(): { send(message: unknown): void; next(): Promise<{ type: string }>; ended: Promise<Ended> } {
  const child = spawn(process.execPath, [PROCESS], { stdio: ['pipe', 'inherit', 'inherit', 'pipe'] })
  started.push(child)
  const lines: string[] = []
  const waiting: Array<(line: string) => void> = []
  let partial = ''
  ;(child.stdio[3] as Readable).on('data', (chunk: Buffer) => {
    const parts = (partial + chunk.toString()).split('\n')
    partial = parts.pop() ?? ''
    for (const line of parts) {
      const taker = waiting.shift()
      if (taker !== undefined) taker(line)
      else lines.push(line)
    }
  })
  return {
    send: (message) => child.stdin?.write(`${JSON.stringify(message)}\n`),
    next: () => {
      const line = lines.shift()
      return new Promise((resolve) => (line !== undefined ? resolve(line) : waiting.push(resolve))).then((l) => JSON.parse(l as string))
    },
    ended: new Promise((resolve) => child.once('exit', (code, signal) => resolve({ code, signal }))),
  }
}

describe("a strict call's process, once its answer is written", () => {
  it('ends itself at once, killed by its own SIGKILL: no one else has to end it, and its answer is whole', async () => {
    const proc = strictProcess()
    proc.send({ type: 'setup', traits: TRAITS })
    expect((await proc.next()).type).toBe('spare-ready')
    const body = JSON.stringify({ v: 2, kind: 'invoke', tool: { id: 'echo' }, input: { message: 'hi' }, ctx: {} })
    proc.send({ type: 'call', task: { type: 'call', callId: 1, key: entry.key, body, ids: {} }, entry })
    const result = (await proc.next()) as { type: string; result?: { outcome: string; body: string } }
    expect(result.type).toBe('result')
    expect(result.result?.outcome).toBe('ok')
    expect(JSON.parse(result.result?.body ?? '{}')).toMatchObject({ kind: 'result' })
    expect(await proc.ended).toEqual({ code: null, signal: 'SIGKILL' })
  })
})

describe("a strict process that probed the pack's modules at boot", () => {
  it('ends itself as it answers the probe', async () => {
    const proc = strictProcess()
    proc.send({ type: 'setup', traits: TRAITS })
    expect((await proc.next()).type).toBe('spare-ready')
    proc.send({ type: 'probe', entries: [entry] })
    expect(await proc.next()).toEqual({ type: 'probed', problems: [] })
    expect(await proc.ended).toEqual({ code: null, signal: 'SIGKILL' })
  })
})
