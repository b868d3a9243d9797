// What --watch follows in a pack's tree (src/pack-files.ts, src/watch-tree.ts): the source
// files under the module root, never node_modules or dot folders; and a save is seen by the
// stat poll alone where the file system delivers no events (a bind mount from another machine).
import { mkdirSync, writeFileSync } from 'node:fs'
import { join } from 'node:path'
import { afterEach, describe, expect, it } from 'vitest'
import { changedFiles, MAX_DIRS, stampFiles, walkPackTree } from '../../src/pack-files.js'
import type { Watcher } from '../../src/watch.js'
import { watchTree } from '../../src/watch-tree.js'
import { tempDirs } from '../helpers/temp-dir.js'

const tempDir = tempDirs()

function tree(files: Record<string, string>): string {
  const root = tempDir('kph-tree-')
  for (const [path, text] of Object.entries(files)) {
    mkdirSync(join(root, path, '..'), { recursive: true })
    writeFileSync(join(root, path), text)
  }
  return root
}

let watcher: Watcher | undefined
afterEach(() => {
  watcher?.close()
  watcher = undefined
})

describe('the files of a pack', () => {
  it('are its source files (JavaScript, TypeScript, JSON) at any depth, not node_modules, dot folders or other files', () => {
    const root = tree({
      'index.json': '{}',
      'tools/a.ts': '',
      'tools/b.mjs': '',
      'lib/deep/c.cts': '',
      'lib/d.cjs': '',
      'lib/e.mts': '',
      'lib/f.js': '',
      'README.md': '',
      'tools/a.ts.swp': '',
      'node_modules/dep/index.js': '',
      '.git/hooks/x.js': '',
      '.cache/y.ts': '',
    })
    const found = walkPackTree(root).files.map((f) => f.slice(root.length + 1))
    expect(found).toEqual(['index.json', 'lib/d.cjs', 'lib/deep/c.cts', 'lib/e.mts', 'lib/f.js', 'tools/a.ts', 'tools/b.mjs'])
  })

  it('include the extra files asked for, wherever they are', () => {
    const root = tree({ 'a.js': '' })
    const outside = tree({ 'map.json': '{}' })
    expect(walkPackTree(root, [join(outside, 'map.json')]).files).toEqual([join(root, 'a.js'), join(outside, 'map.json')].sort())
  })

  it('are walked within a bound on folders: a module root pointed at a large tree does not stall the front', () => {
    const files: Record<string, string> = {}
    for (let i = 0; i <= MAX_DIRS; i++) files[`d${i}/x.js`] = ''
    const walked = walkPackTree(tree(files))
    expect(walked.truncated).toBe(true)
    expect(walked.dirs).toHaveLength(MAX_DIRS)
  })

  it('changed files are the saved, added and removed ones, relative to the root', () => {
    const root = tree({ 'a.js': '1', 'b.js': '1', 'c.js': '1' })
    const before = stampFiles(walkPackTree(root).files)
    writeFileSync(join(root, 'b.js'), '22')
    writeFileSync(join(root, 'd.js'), '1')
    const after = new Map(stampFiles(walkPackTree(root).files))
    after.delete(join(root, 'c.js'))
    expect(changedFiles(before, after, root)).toEqual(['b.js', 'c.js', 'd.js'])
  })
})

describe('where the file system delivers no events', () => {
  it('the stat poll alone sees a save in a nested folder at its next look (polls are 500 ms apart)', async () => {
    const root = tree({ 'lib/deep/x.ts': 'export const x = 1\n' })
    const noEvents = () => {
      throw new Error('no events on this mount')
    }
    // Each look at the tree reads `extra`: counted, not timed, so a loaded machine's slow polls
    // change nothing; a poll that never sees the nested save fails on the test's timeout.
    let looks = 0
    let looksWhenSeen = 0
    const changed = new Promise<void>((resolve) => {
      const seen = () => {
        looksWhenSeen = looks
        resolve()
      }
      const extra = () => {
        looks++
        return []
      }
      watcher = watchTree(root, extra, seen, { debounceMs: 50, watchFolder: noEvents })
    })
    await new Promise((r) => setTimeout(r, 100))
    const looksWhenSaved = looks
    writeFileSync(join(root, 'lib/deep/x.ts'), 'export const x = 2\n')
    await changed
    // The look under way as the save landed may have missed it; the one after cannot.
    expect(looksWhenSeen - looksWhenSaved, 'looks after the save until it was seen').toBeLessThanOrEqual(2)
  })

  it('with events, the same save is seen sooner than a poll could see it', async () => {
    const root = tree({ 'lib/x.ts': '' })
    // Each look at the tree (the first, then each poll) reads `extra`: counted, not timed, so a
    // loaded machine cannot pass a poll off as an event.
    let looks = 0
    let looksWhenSeen = 0
    const changed = new Promise<void>((resolve) => {
      const seen = () => {
        looksWhenSeen = looks
        resolve()
      }
      const extra = () => {
        looks++
        return []
      }
      watcher = watchTree(root, extra, seen, { debounceMs: 10 })
    })
    await new Promise((r) => setTimeout(r, 50))
    const looksWhenSaved = looks
    writeFileSync(join(root, 'lib/x.ts'), 'export const x = 2\n')
    await changed
    // Seen before any poll looked after the save (polls are 500 ms apart): only an event could have told.
    expect(looksWhenSeen, 'looks at the tree when the save was seen').toBe(looksWhenSaved)
  })
})
