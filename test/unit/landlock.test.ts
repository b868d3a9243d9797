import { chmodSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { describe, expect, it, onTestFinished } from 'vitest'
import { inLandlock, type Landlock, probeLandlock } from '../../src/pool/landlock.js'
import { packProcessCommand, strictCommand } from '../../src/pool/strict-flags.js'

const ON: Landlock = { kind: 'on', helper: '/opt/host/landlock-exec', abi: 7 }
const OFF: Landlock = { kind: 'off', why: 'no helper' }
const LIMITS = { readRoots: ['/pack'], networkNone: false, memMB: undefined, dataBaseline: undefined }

describe('a pack process starts inside a Landlock domain where the machine has one', () => {
  it('a command goes through the helper, with --no-network only for a network-none process', () => {
    expect(inLandlock(['node', 'x.js'], { noNetwork: false }, ON)).toEqual(['/opt/host/landlock-exec', '--', 'node', 'x.js'])
    expect(inLandlock(['node', 'x.js'], { noNetwork: true }, ON)).toEqual(['/opt/host/landlock-exec', '--no-network', '--', 'node', 'x.js'])
  })

  it('without the wall a command is left as it was', () => {
    expect(inLandlock(['node', 'x.js'], { noNetwork: true }, OFF)).toEqual(['node', 'x.js'])
  })

  it("a strict call's process and a warm pack process are both started through it, the data limit's shell inside the domain", () => {
    // A strict call's process writes only in its call folder, and reads only where it is told
    // (its roots, Node's install, the system's files); a warm one is told neither.
    const strict = strictCommand('/host/strict.cjs', LIMITS, undefined, ON)
    const afterWall = strict.indexOf('--')
    expect(strict.slice(0, 2)).toEqual(['/opt/host/landlock-exec', '--call-folder'])
    expect(strict.slice(afterWall, afterWall + 2)).toEqual(['--', process.execPath])
    const reads = strict.slice(2, afterWall).filter((_, i) => i % 2 === 1)
    expect(
      strict
        .slice(2, afterWall)
        .filter((_, i) => i % 2 === 0)
        .every((flag) => flag === '--read'),
    ).toBe(true)
    expect(reads).toEqual(expect.arrayContaining(['/pack', '/usr', '/etc/ssl', '/etc/resolv.conf']))
    expect(reads).not.toEqual(expect.arrayContaining(['/etc']))
    expect(reads.some((path) => path === '/run' || path === '/var' || path === '/tmp' || path === '/etc')).toBe(false)
    const limited = strictCommand('/host/strict.cjs', { ...LIMITS, networkNone: true, memMB: 64, dataBaseline: 1 << 20 }, undefined, ON)
    expect(limited.slice(0, 3)).toEqual(['/opt/host/landlock-exec', '--no-network', '--call-folder'])
    expect(limited.slice(limited.indexOf('--'), limited.indexOf('--') + 2)).toEqual(['--', '/bin/sh'])
    expect(packProcessCommand('/host/pack-process.js', false, { hidden: ['/proc'], keepModes: false }, undefined, ON).slice(0, 3)).toEqual([
      '/opt/host/landlock-exec',
      '--',
      process.execPath,
    ])
    expect(strictCommand('/host/strict.cjs', LIMITS, undefined, OFF)[0]).toBe(process.execPath)
  })
})

/** An executable that stands in for the helper and runs `script` as its probe. */
function standIn(script: string): string {
  const dir = mkdtempSync(join(tmpdir(), 'kph-landlock-'))
  onTestFinished(() => rmSync(dir, { recursive: true, force: true }))
  const path = join(dir, 'landlock-exec')
  writeFileSync(path, `#!/bin/sh\n${script}\n`)
  chmodSync(path, 0o755)
  return path
}

describe('the probe says why there is no wall', () => {
  it('a helper that was never built (no C compiler at build) names itself and the fix', () => {
    const probe = probeLandlock('/nonexistent/landlock-exec')
    expect(probe).toEqual({ kind: 'off', why: expect.stringContaining('/nonexistent/landlock-exec did not run (ENOENT): build the host with a C compiler') })
  })

  it("a kernel without Landlock's signal scope is named as the reason (a stand-in helper that answers ABI 5)", () => {
    const probe = probeLandlock(standIn('echo 5\nexit 1'))
    expect(probe).toEqual({ kind: 'off', why: "this kernel's Landlock is ABI 5; walling signals needs ABI 6 (Linux 6.12 or later)" })
  })

  it('a kernel with it where the wall still cannot be put up (a seccomp profile) names the step that failed', () => {
    const probe = probeLandlock(standIn("echo 7\necho 'kindgi landlock-exec: seccomp filter: Operation not permitted' >&2\nexit 1"))
    expect(probe).toEqual({
      kind: 'off',
      why: 'the wall could not be put up here (seccomp filter: Operation not permitted): a seccomp profile that refuses Landlock or seccomp filters?',
    })
  })
})
