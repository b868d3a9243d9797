// The benchmark's generated N-tool pack must be one the host accepts: it passes the same
// index checks boot runs, and every module it names is written.
import { existsSync, mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { afterAll, describe, expect, it } from 'vitest'
import { bigInput, benchCases } from '../../bench/cases.js'
import { generatePack, writePack } from '../../bench/pack-gen.js'
import { loadPackIndex } from '../../src/pack-index.js'

const dir = mkdtempSync(join(tmpdir(), 'bench-pack-gen-'))
afterAll(() => rmSync(dir, { recursive: true, force: true }))

describe('generatePack', () => {
  it('makes N tools, each with its own module and schemas', () => {
    const pack = generatePack(50)
    const tools = pack.index.tools as Array<{ id: string; modulePath: string }>
    expect(tools).toHaveLength(50)
    expect(new Set(tools.map((t) => t.id)).size).toBe(50)
    for (const t of tools) expect(pack.files[t.modulePath]).toContain('export default function')
  })

  it("writes a pack the host's index checks accept", () => {
    const index = writePack(dir, generatePack(50))
    const loaded = loadPackIndex(index, dir, 'none')
    expect(loaded.kind).toBe('ok')
    if (loaded.kind !== 'ok') return
    expect(loaded.problems).toEqual([])
    expect(loaded.pack.entries).toHaveLength(50)
    for (const e of loaded.pack.entries) expect(existsSync(e.absPath)).toBe(true)
  })
})

describe('bench pack and cases', () => {
  it("the bench pack passes the index checks and has every case's tool", () => {
    const root = join(import.meta.dirname, '../../bench/pack')
    const loaded = loadPackIndex(join(root, 'index.json'), root, 'none')
    expect(loaded.kind).toBe('ok')
    if (loaded.kind !== 'ok') return
    expect(loaded.problems).toEqual([])
    const ids = loaded.pack.entries.map((e) => e.id)
    for (const c of benchCases()) {
      const body = JSON.parse(c.body) as { tool?: { id: string }; check?: { id: string } }
      expect(ids).toContain(body.tool?.id ?? body.check?.id)
    }
    expect(loaded.pack.entries.find((e) => e.id === 'echo-strict')?.posture).toBe('strict')
    expect(loaded.pack.entries.find((e) => e.id === 'echo-limits')).toMatchObject({ memMB: 128, cpuMs: 1000 })
  })

  it('the big input is at least 100 KiB of JSON, and not much more', () => {
    const size = JSON.stringify(bigInput(100 * 1024)).length
    expect(size).toBeGreaterThanOrEqual(100 * 1024)
    expect(size).toBeLessThan(101 * 1024)
  })
})
