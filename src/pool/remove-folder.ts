// Removes a strict call's folder (ctx.tmpDir) whatever its call left in it, off the event loop.
// Pack code owns what it made there and may take its own write permission away (a sub-folder
// made 0500): a service without CAP_DAC_OVERRIDE, as the image's user is, then cannot unlink
// what is inside, and the removal threw in the spawner, which ended with every strict call in
// flight (stop 29). So the walk gives every folder of the tree back its owner's permissions
// first, never following a link, and a removal that still fails is a value, never a throw.
// A folder that is not empty is removed on a thread of its own: 200,000 files removed on the
// spawner's event loop held it, and every strict call's messages with it, for ~2 s, and removed
// there with asynchronous calls they still cost it a callback each (stop 29, a second pass).
// One thread, started on first need, holding its process up only while a removal is pending;
// one id → completion map; its end settles all pending.
import { rmdir } from 'node:fs/promises'
import { Worker } from 'node:worker_threads'
import type { Removal } from './remove-tree.js'

export type { Removal }

// What the thread runs (remove-tree.ts: the walk, and why Node's own removal is not enough alone).
// Started with no Node options of its process's: one such as --input-type refuses a file (tried).
const THREAD = new URL('./remove-folder-thread.js', import.meta.url)

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
    const worker = removalThread()
    worker.ref()
    worker.postMessage({ id, folder })
  })
}

function removalThread(): Worker {
  if (thread !== undefined) return thread
  const started = new Worker(THREAD, { execArgv: [] })
  started.on('message', ({ id, removal }: { id: number; removal: Removal }) => {
    pending.get(id)?.(removal)
    pending.delete(id)
    if (pending.size === 0) started.unref()
  })
  const ended = (why: string) => {
    if (thread !== started) return
    thread = undefined
    for (const settle of pending.values()) settle({ kind: 'error', message: `the removal thread ended: ${why}` })
    pending.clear()
  }
  started.on('error', (err) => ended(err.message))
  started.on('exit', (code) => ended(`exit code ${code}`))
  // It keeps its process alive while a removal is pending (the front's close of the call root
  // awaits one as the service stops), and not once none is: an unref() before the listeners
  // did not hold (one added after refs the thread's port again), and a process that had removed
  // a folder on it never ended.
  started.unref()
  thread = started
  return started
}
