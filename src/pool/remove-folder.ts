// Removes a strict call's folder (ctx.tmpDir) whatever its call left in it, off the event loop.
// Pack code owns what it made there and may take its own write permission away (a sub-folder
// made 0500): a service without CAP_DAC_OVERRIDE, as the image's user is, then cannot unlink
// what is inside, and the removal threw in the spawner, which ended with every strict call in
// flight (stop 29). So the walk gives every folder of the tree back its owner's permissions
// first, never following a link, and a removal that still fails is a value, never a throw.
// A folder that is not empty is removed on a thread of its own: 200,000 files removed on the
// spawner's event loop held it, and every strict call's messages with it, for ~2 s, and removed
// there with asynchronous calls they still cost it a callback each (stop 29, a second pass).
// One thread, started on first need; one id → completion map; its end settles all pending.
import { rmdir } from 'node:fs/promises'
import { Worker } from 'node:worker_threads'

export type Removal = { kind: 'ok' } | { kind: 'error'; message: string }

// The thread's code: Node's own synchronous removal, which walks the tree in C++.
const THREAD = `
const { chmodSync, lstatSync, readdirSync, rmSync } = require('node:fs')
const { parentPort } = require('node:worker_threads')
function ownersPermissions(root) {
  const folders = [root]
  for (let folder = folders.pop(); folder !== undefined; folder = folders.pop()) {
    if (!lstatSync(folder).isDirectory()) continue
    chmodSync(folder, 0o700)
    for (const entry of readdirSync(folder, { withFileTypes: true })) if (entry.isDirectory()) folders.push(folder + '/' + entry.name)
  }
}
function remove(folder) {
  try {
    rmSync(folder, { recursive: true, force: true })
    return { kind: 'ok' }
  } catch {}
  try {
    ownersPermissions(folder)
    rmSync(folder, { recursive: true, force: true })
    return { kind: 'ok' }
  } catch (err) {
    return { kind: 'error', message: String(err && err.message) }
  }
}
parentPort.on('message', ({ id, folder }) => parentPort.postMessage({ id, removal: remove(folder) }))
`

let thread: Worker | undefined
let nextId = 0
const pending = new Map<number, (removal: Removal) => void>()

export async function removeFolder(folder: string): Promise<Removal> {
  try {
    // Most calls leave their folder empty: one rmdir, and the thread only for the rest.
    await rmdir(folder)
    return { kind: 'ok' }
  } catch {
    // not empty, or not removable as it is
  }
  return new Promise((resolve) => {
    const id = nextId++
    pending.set(id, resolve)
    removalThread().postMessage({ id, folder })
  })
}

function removalThread(): Worker {
  if (thread !== undefined) return thread
  const started = new Worker(THREAD, { eval: true })
  // It keeps nothing alive: a process with nothing else to do may end with removals pending.
  started.unref()
  started.on('message', ({ id, removal }: { id: number; removal: Removal }) => {
    pending.get(id)?.(removal)
    pending.delete(id)
  })
  const ended = (why: string) => {
    if (thread !== started) return
    thread = undefined
    for (const settle of pending.values()) settle({ kind: 'error', message: `the removal thread ended: ${why}` })
    pending.clear()
  }
  started.on('error', (err) => ended(err.message))
  started.on('exit', (code) => ended(`exit code ${code}`))
  thread = started
  return started
}
