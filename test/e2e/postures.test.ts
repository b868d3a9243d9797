// docs/spec/CONTRACT.md §6 postures on a service whose least posture is none: each tool's own sandbox
// decides where it runs, and a worker never runs two calls at once.
import { existsSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { describe, expect, it } from 'vitest'
import { invoke, within, sharedHost } from '../helpers/host.js'
import { tempDirs } from '../helpers/temp-dir.js'

// Removed after the shared host has stopped.
const tempDir = tempDirs()
const host = sharedHost()

describe('context-isolated', () => {
  it('keeps a warm worker of its own across calls, and replaces it after a call that failed in the handler', async () => {
    const first = (await invoke(host, 'flaky')).body.output.calls as number
    expect((await invoke(host, 'flaky')).body.output.calls).toBe(first + 1)
    expect((await invoke(host, 'flaky', { fail: true })).body).toMatchObject({ code: 'handler-throw', toolId: 'flaky' })
    await host.waitFor('worker-replaced', (l) => l.reason === 'context-isolated' && l.id === 'flaky@1.0.0')
    expect((await invoke(host, 'flaky')).body.output.calls).toBe(1)
  })
  it('shares no module state with the same module run by a `none` tool', async () => {
    const shared = (await invoke(host, 'counter')).body.output.count as number
    const isolated = (await invoke(host, 'isolated')).body.output.count as number
    expect((await invoke(host, 'isolated')).body.output.count).toBe(isolated + 1)
    expect((await invoke(host, 'counter')).body.output.count).toBe(shared + 1)
  })
})

describe("strict, as a tool's own posture", () => {
  it('gives every call a fresh worker, its own tmpDir removed afterwards, no writes elsewhere and no process spawning', async () => {
    const outside = join(tempDir('kph-strict-'), 'escaped.txt')
    const a = (await invoke(host, 'strict-probe', { outside })).body.output
    const b = (await invoke(host, 'strict-probe', { outside })).body.output
    expect(a.writes).toEqual({ inside: 'written', outside: 'ERR_ACCESS_DENIED', outsidePromise: 'ERR_ACCESS_DENIED' })
    expect(existsSync(outside)).toBe(false)
    expect(a.calls).toBe(1)
    expect(b.calls).toBe(1)
    expect(a.tmpExists).toBe(true)
    expect(a.tmpDir).not.toBe(b.tmpDir)
    expect(a.spawn).toBe('ERR_ACCESS_DENIED (ChildProcess)')
    await within(5_000, () => !existsSync(a.tmpDir))
    expect(existsSync(a.tmpDir)).toBe(false)
    await host.waitFor('worker-replaced', (l) => l.reason === 'strict' && l.id === 'strict-probe@1.0.0')
  })
  it('serves concurrent strict calls, each in its own worker', async () => {
    const outside = join(tmpdir(), 'kph-never-written.txt')
    const results = await Promise.all(Array.from({ length: 4 }, () => invoke(host, 'strict-probe', { outside })))
    for (const r of results) expect(r.body.output.calls).toBe(1)
    expect(new Set(results.map((r) => r.body.output.tmpDir)).size).toBe(4)
  })
})
