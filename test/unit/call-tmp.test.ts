import { spawnSync } from 'node:child_process'
import { chmodSync, chownSync, existsSync, mkdirSync, renameSync, rmdirSync, rmSync, statSync, writeFileSync } from 'node:fs'
import { dirname } from 'node:path'
import { describe, expect, it, onTestFinished } from 'vitest'
import type { CallTmp } from '../../src/pool/call-tmp.js'
// The built module: its removal thread is a file of its own, which Node runs built.
import { createCallTmp, rootIdentity } from '../../dist/src/pool/call-tmp.js'
import { removeTree } from '../../dist/src/pool/remove-tree.js'

function made(): CallTmp {
  const result = createCallTmp()
  if (result.kind === 'error') throw new Error(result.problem)
  return result.tmp
}

/** Runs `script` as the folder's owner without root's override: this user, or nobody when this is root. */
function asOwner(root: string, script: string): { status: number | null; stderr: string } {
  const nobody = 65534
  if (process.getuid?.() === 0) chownSync(root, nobody, nobody)
  const who = process.getuid?.() === 0 ? { uid: nobody, gid: nobody } : {}
  const run = spawnSync('/bin/sh', ['-c', script], { encoding: 'utf8', ...who })
  return { status: run.status, stderr: run.stderr }
}

describe('a root made listable is not used again', () => {
  it('its mode set back to 0700 by anything: the next call gets a new root, unlistable', () => {
    const tmp = made()
    onTestFinished(() => tmp.close())
    const root = tmp.root
    chmodSync(root, 0o700)
    const { folder } = tmp.reserve()
    expect(dirname(folder)).not.toBe(root)
    expect(statSync(dirname(folder)).mode & 0o777).toBe(0o300)
  })
})

describe('a root no one can remove to make another in its place', () => {
  it("is never empty (ext4 and xfs give a removed folder's inode number to the next one at once): removing it fails", () => {
    const tmp = made()
    onTestFinished(() => tmp.close())
    expect(() => rmdirSync(tmp.root)).toThrow(/ENOTEMPTY/)
    // And after a replacement too: the new root is held the same way.
    const away = `${tmp.root}-away`
    renameSync(tmp.root, away)
    onTestFinished(() => {
      removeTree(away)
    })
    const { folder } = tmp.reserve()
    expect(() => rmdirSync(dirname(folder))).toThrow(/ENOTEMPTY/)
  })
})

describe("strict calls' folders live in a root no process of the service's user can list", () => {
  it('its owner cannot list the root, yet makes, writes and removes a folder it knows the name of', () => {
    const tmp = made()
    onTestFinished(() => tmp.close())
    const { folder } = tmp.reserve()
    const listed = asOwner(tmp.root, `ls "${tmp.root}"`)
    expect(listed.status, 'ls of the root').not.toBe(0)
    expect(listed.stderr).toMatch(/Permission denied/)
    const used = asOwner(tmp.root, `mkdir "${folder}" && echo hi > "${folder}/f" && cat "${folder}/f" && rm -r "${folder}"`)
    expect(used, 'a folder by its name').toEqual({ status: 0, stderr: '' })
  })

  it('close removes the root and whatever calls left in it', async () => {
    const tmp = made()
    const { folder } = tmp.reserve()
    mkdirSync(folder)
    writeFileSync(`${folder}/left`, 'x')
    await tmp.close()
    expect(existsSync(tmp.root)).toBe(false)
  })
})

describe("the root is the front's to make", () => {
  it('a root something removed is made again, unlistable, by the next reservation, and never after close', async () => {
    const tmp = made()
    rmSync(tmp.root, { recursive: true, force: true })
    const { folder, root } = tmp.reserve()
    expect(statSync(tmp.root).mode & 0o777).toBe(0o300)
    expect(folder.startsWith(`${tmp.root}/call-`)).toBe(true)
    expect(root).toBe(rootIdentity(tmp.root))
    await tmp.close()
    tmp.reserve()
    expect(existsSync(tmp.root)).toBe(false)
  })

  it('a folder put in place of the root (the root renamed away) is not used: the next reservation makes a new root under a new name', async () => {
    const tmp = made()
    onTestFinished(() => tmp.close())
    const first = tmp.root
    renameSync(first, `${first}-moved`)
    onTestFinished(() => rmSync(`${first}-moved`, { recursive: true, force: true }))
    mkdirSync(first, { mode: 0o700 })
    onTestFinished(() => rmSync(first, { recursive: true, force: true }))
    const { folder, root } = tmp.reserve()
    expect(tmp.root).not.toBe(first)
    expect(folder.startsWith(`${tmp.root}/call-`)).toBe(true)
    expect(root).toBe(rootIdentity(tmp.root))
    expect(root).not.toBe(rootIdentity(first))
  })
})

describe('a temporary folder the root cannot be made in', () => {
  it('is a problem naming the folder and what gives the service one, not a throw', () => {
    const before = process.env.TMPDIR
    process.env.TMPDIR = '/dev/null/tmp'
    try {
      const result = createCallTmp()
      expect(result.kind).toBe('error')
      const problem = (result as { problem: string }).problem
      expect(problem).toContain("Cannot make the folder for strict calls' ctx.tmpDir in /dev/null/tmp: ENOTDIR")
      expect(problem).toContain('set TMPDIR to one, or mount a writable /tmp')
    } finally {
      if (before === undefined) delete process.env.TMPDIR
      else process.env.TMPDIR = before
    }
  })
})
