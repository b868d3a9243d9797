// The strict calls' root is made at its final mode, never wider for a moment (a review, stop 37):
// a process of the service's user that opened it while it was listable could list it through
// that descriptor for good, and learn every later call's folder. The race itself is microseconds
// wide, too narrow for a test to win at will; what the test can hold is every mode the root
// is ever given, from its first system call on.
import { chmodSync, renameSync, rmSync } from 'node:fs'
import { describe, expect, it, vi } from 'vitest'

const modes: Array<{ call: string; path: string; mode: number | undefined }> = []

vi.mock('node:fs', async (original) => {
  const real = (await original()) as typeof import('node:fs')
  return {
    ...real,
    mkdirSync(path: string, options?: { mode?: number; recursive?: boolean }) {
      modes.push({ call: 'mkdir', path: String(path), mode: options?.mode })
      return real.mkdirSync(path, options)
    },
    chmodSync(path: string, mode: number) {
      modes.push({ call: 'chmod', path: String(path), mode })
      return real.chmodSync(path, mode)
    },
  }
})

const { createCallTmp } = await import('../../dist/src/pool/call-tmp.js')

describe("the strict calls' root is never listable, not even as it is made", () => {
  it('at boot, and again when a root was replaced: made at 0300 and never set wider', async () => {
    const result = createCallTmp()
    if (result.kind === 'error') throw new Error(result.problem)
    const first = result.tmp.root
    // The root renamed away, as a warm tool did (stop 36): the next reserve makes a new one.
    const away = `${first}-away`
    renameSync(first, away)
    result.tmp.reserve()
    chmodSync(away, 0o700)
    rmSync(away, { recursive: true })
    const second = result.tmp.root
    expect(second).not.toBe(first)
    for (const root of [first, second]) {
      const given = modes.filter((m) => m.path === root)
      expect(
        given.map((m) => m.call),
        root,
      ).toEqual(['mkdir', 'chmod'])
      for (const m of given) expect(m.mode, `${m.call} of ${root}`).toBe(0o300)
    }
    await result.tmp.close()
  })
})
