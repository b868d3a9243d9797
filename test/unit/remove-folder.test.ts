// A strict call's folder goes whatever its call left in it (src/pool/remove-folder.ts): a
// sub-folder its call made read-only once threw in the spawner and ended it (stop 29). The
// walk that gives folders back their permissions never follows a link out of the folder, not
// even one swapped in on its path as it walks (stop 37), and runs off the event loop.
import { spawn, spawnSync } from 'node:child_process'
import { chmodSync, existsSync, lstatSync, mkdirSync, mkdtempSync, renameSync, rmSync, symlinkSync, watch, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { fileURLToPath } from 'node:url'
import { Worker } from 'node:worker_threads'
import { describe, expect, it, onTestFinished } from 'vitest'
// The built module: its thread is a file of its own, which Node runs built.
import { removeFolder } from '../../dist/src/pool/remove-folder.js'

const REMOVE_TREE = fileURLToPath(new URL('../../dist/src/pool/remove-tree.js', import.meta.url))

function scratch(): string {
  const dir = mkdtempSync(join(tmpdir(), 'kph-remove-folder-'))
  onTestFinished(() => {
    chmodSync(dir, 0o700)
    rmSync(dir, { recursive: true, force: true })
  })
  return dir
}

describe('a call folder is removed whatever its call left in it', () => {
  it('a read-only sub-folder with a file in it goes, and the removal says ok', async () => {
    const folder = join(scratch(), 'call')
    mkdirSync(join(folder, 'locked', 'deeper'), { recursive: true })
    writeFileSync(join(folder, 'locked', 'deeper', 'keep'), 'x')
    chmodSync(join(folder, 'locked', 'deeper'), 0o500)
    chmodSync(join(folder, 'locked'), 0o000)
    expect(await removeFolder(folder)).toEqual({ kind: 'ok' })
    expect(existsSync(folder)).toBe(false)
  })

  it('a link to a folder outside is removed, not followed: the folder outside keeps its mode and its files', async () => {
    const base = scratch()
    const outside = join(base, 'outside')
    mkdirSync(outside)
    writeFileSync(join(outside, 'precious'), 'x')
    chmodSync(outside, 0o500)
    const folder = join(base, 'call')
    mkdirSync(join(folder, 'locked'), { recursive: true })
    symlinkSync(outside, join(folder, 'locked', 'link'))
    chmodSync(join(folder, 'locked'), 0o500)
    expect(await removeFolder(folder)).toEqual({ kind: 'ok' })
    expect(existsSync(folder)).toBe(false)
    expect(lstatSync(outside).mode & 0o777).toBe(0o500)
    expect(existsSync(join(outside, 'precious'))).toBe(true)
  })

  it('a folder that is not there is no error', async () => {
    expect(await removeFolder(join(scratch(), 'never-made'))).toEqual({ kind: 'ok' })
  })
})

/** A thread that removes `paths` one by one when told to, and says when it has. */
function otherRemover(paths: string[]): { go: () => Promise<void>; end: () => Promise<number> } {
  const code = `const { rmSync } = require('node:fs'); const { parentPort, workerData } = require('node:worker_threads')
    parentPort.once('message', () => { for (const p of workerData) rmSync(p, { recursive: true, force: true }); parentPort.postMessage('done') })`
  const worker = new Worker(code, { eval: true, workerData: paths })
  const online = new Promise((resolve) => worker.once('online', resolve))
  return {
    go: async () => {
      await online
      const done = new Promise<void>((resolve) => worker.once('message', () => resolve()))
      worker.postMessage('go')
      await done
    },
    end: () => worker.terminate(),
  }
}

describe('a removal raced by another remover of what is in the folder', () => {
  it('still removes the folder (Node gives up without a word; five rounds, 200 sub-folders each)', async () => {
    // Its thread started first, so both removals run at once.
    const warm = join(scratch(), 'warm')
    mkdirSync(join(warm, 'x'), { recursive: true })
    expect(await removeFolder(warm)).toEqual({ kind: 'ok' })
    for (let round = 0; round < 5; round++) {
      const folder = join(scratch(), 'call')
      const subs = Array.from({ length: 200 }, (_, i) => join(folder, `d${i}`))
      for (const sub of subs) {
        mkdirSync(join(sub, 'e'), { recursive: true })
        writeFileSync(join(sub, 'e', 'f'), 'x')
      }
      const other = otherRemover(subs)
      try {
        const [removal] = await Promise.all([removeFolder(folder), other.go()])
        expect(removal, `round ${round}`).toEqual({ kind: 'ok' })
        expect(existsSync(folder), `round ${round}`).toBe(false)
      } finally {
        await other.end()
      }
    }
  })
})

describe('the removal thread keeps nothing alive', () => {
  it('a process that removed a folder on it ends on its own, as a script file and as --input-type=module code', () => {
    const base = scratch()
    const module = fileURLToPath(new URL('../../dist/src/pool/remove-folder.js', import.meta.url))
    // The script holds a timer while it waits (the thread alone must not keep it alive), then lets go.
    const script = (folder: string) =>
      `const { removeFolder } = await import(${JSON.stringify(module)}); const hold = setInterval(() => {}, 1000)
      console.log(JSON.stringify(await removeFolder(${JSON.stringify(folder)}))); clearInterval(hold)`
    const file = join(base, 'remove.mjs')
    writeFileSync(file, script(join(base, 'one')))
    const ways = [
      { name: 'a script file', folder: join(base, 'one'), args: [file] },
      { name: '--input-type=module', folder: join(base, 'two'), args: ['--input-type=module', '-e', script(join(base, 'two'))] },
    ]
    for (const way of ways) {
      mkdirSync(join(way.folder, 'left'), { recursive: true })
      const run = spawnSync(process.execPath, way.args, { encoding: 'utf8', timeout: 10_000 })
      expect(run.signal, `${way.name}: killed at the 10-s timeout, it did not end`).toBeNull()
      expect(run.stdout.trim(), way.name).toBe('{"kind":"ok"}')
      expect(existsSync(way.folder), way.name).toBe(false)
    }
  })
})

/** A tree as a red-team pass made one (stop 35): a read-only folder with a file, ~7,300 characters deep, every path named on the way under PATH_MAX. */
function deeperThanPathMax(folder: string): void {
  const segment = 'x'.repeat(200)
  const chain = (top: string) => {
    let path = top
    mkdirSync(path, { recursive: true })
    while (path.length + segment.length + 1 < 3800) {
      path = `${path}/${segment}`
      mkdirSync(path)
    }
    return path
  }
  const bottomA = chain(join(folder, 'a'))
  const bottomB = chain(join(folder, 'b'))
  mkdirSync(join(bottomB, 'ro'))
  writeFileSync(join(bottomB, 'ro', 'left-behind'), 'x'.repeat(4096))
  chmodSync(join(bottomB, 'ro'), 0o500)
  renameSync(join(folder, 'b'), join(bottomA, 'b'))
}

describe('a tree deeper than a path may be long', () => {
  it('goes whole, its read-only folder at the bottom too, for a service without CAP_DAC_OVERRIDE (the image runs as such a user)', () => {
    const folder = join(scratch(), 'call')
    deeperThanPathMax(folder)
    // As root, the removal runs with every capability dropped, as the image's user has none.
    const removal = `import(${JSON.stringify(REMOVE_TREE)}).then((m) => process.stdout.write(JSON.stringify(m.removeTree(process.argv[1]))))`
    const asRoot = process.getuid?.() === 0
    const command = asRoot ? ['setpriv', '--bounding-set=-all', '--inh-caps=-all', '--', process.execPath] : [process.execPath]
    const run = spawnSync(command[0] as string, [...command.slice(1), '-e', removal, folder], { encoding: 'utf8' })
    expect(run.stderr).toBe('')
    expect(JSON.parse(run.stdout)).toEqual({ kind: 'ok' })
    expect(existsSync(folder)).toBe(false)
  })
})

describe('a folder on the walk’s path swapped for a link while it walks (a red-team pass, stop 37)', () => {
  it('touches nothing outside the tree, for a service without CAP_DAC_OVERRIDE: a folder named like one inside keeps its mode', async () => {
    // The attack: another process of the service's user (a warm tool's child) swaps "<call>/a"
    // for a link to the folder that holds the strict calls' root, once the walk is deleting in
    // "a"; the walk's chmod of "<call>/a/<root's name>" then reached the root itself.
    const base = scratch()
    const victim = join(base, 'root')
    mkdirSync(victim, { mode: 0o300 })
    chmodSync(victim, 0o300)
    const folder = join(base, 'call')
    const a = join(folder, 'a')
    mkdirSync(join(a, 'root'), { recursive: true })
    for (let i = 0; i < 4000; i++) writeFileSync(join(a, `d-${i}`), '')
    // Unlistable to its owner, so that Node's own removal gives up at once and the walk runs.
    chmodSync(folder, 0o300)
    let swapped = false
    const watcher = watch(a, () => {
      if (swapped) return
      swapped = true
      renameSync(a, join(folder, 'a-real'))
      symlinkSync(base, a)
    })
    onTestFinished(() => watcher.close())
    const removal = `import(${JSON.stringify(REMOVE_TREE)}).then((m) => process.stdout.write(JSON.stringify(m.removeTree(process.argv[1]))))`
    const asRoot = process.getuid?.() === 0
    const command = asRoot ? ['setpriv', '--bounding-set=-all', '--inh-caps=-all', '--', process.execPath] : [process.execPath]
    const run = spawn(command[0] as string, [...command.slice(1), '-e', removal, folder], { stdio: 'ignore' })
    await new Promise((resolve) => run.once('exit', resolve))
    expect(swapped, 'the walk deleted in "a", and "a" was swapped').toBe(true)
    // Before, the walk made it 0700 and then removed it whole, through the link.
    expect(existsSync(victim), 'the outside folder is still there').toBe(true)
    expect(lstatSync(victim).mode & 0o777, "the outside folder's mode").toBe(0o300)
  })
})
