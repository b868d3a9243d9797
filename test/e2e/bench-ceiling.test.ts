// The strict ceiling (bench/strict-ceiling.ts) is what issue 16's strict target is measured
// against, and it starts its process with the host's own flags and kernel wall: when those
// change, it must still start. Stop 33's `--call-folder` wall made every ceiling process exit
// before its call ("without an absolute KINDGI_CALL_FOLDER"), and the benchmark died with
// EPIPE; nothing in `npm test` ran it. This runs the built ceiling briefly; it times nothing.
import { execFile } from 'node:child_process'
import { readdirSync } from 'node:fs'
import { join } from 'node:path'
import { promisify } from 'node:util'
import { describe, expect, it } from 'vitest'
import type { CeilingResult, CeilingSpec } from '../../bench/strict-ceiling.js'
import { tempDirs } from '../helpers/temp-dir.js'

const ROOT = join(import.meta.dirname, '..', '..')
const CEILING = join(ROOT, 'dist', 'bench', 'strict-ceiling.js')
const tempDir = tempDirs()

async function runCeiling(spec: CeilingSpec, tmp: string): Promise<CeilingResult> {
  const { stdout } = await promisify(execFile)(process.execPath, [CEILING, JSON.stringify(spec)], {
    env: { ...process.env, TMPDIR: tmp },
    timeout: 20_000,
  })
  return JSON.parse(stdout) as CeilingResult
}

describe('the strict ceiling the benchmark measures', () => {
  it("starts the isolation unit under the host's walls, answers each call, and leaves no call folder behind", async () => {
    const tmp = tempDir('kph-ceiling-')
    const spec: CeilingSpec = { modules: [join(ROOT, 'bench', 'pack', 'tools', 'echo.js')], input: { text: 'hi' }, parallel: 2, durationS: 0.5 }
    const result = await runCeiling(spec, tmp)
    expect(result.calls).toBeGreaterThan(0)
    expect(result.p50Ms).toBeGreaterThan(0)
    // A Node process's start alone is some ms of CPU: a reading of the driver alone would be well under.
    expect(result.cpuMsPerCall).toBeGreaterThan(5)
    expect(readdirSync(tmp)).toEqual([])
  })

  it('fails with the reason when its process ends before answering', async () => {
    const tmp = tempDir('kph-ceiling-')
    // big-input reads input.records: given none, its handler throws and the process exits 1.
    const spec: CeilingSpec = { modules: [join(ROOT, 'bench', 'pack', 'tools', 'big-input.js')], input: {}, parallel: 1, durationS: 0.2 }
    await expect(runCeiling(spec, tmp)).rejects.toThrow(/exited \(code 1\) before it answered/)
    expect(readdirSync(tmp)).toEqual([])
  })
})
