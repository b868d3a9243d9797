// Tells when a file of a pack's tree may have changed, for --watch: the module root's source
// files (pack-files.ts) and a few named files beside them. Only the signal: the caller compares
// the files itself and decides whether anything is to be done.
import { watch as fsWatch, type FSWatcher } from 'node:fs'
import { dirname } from 'node:path'
import { stampFiles, stampsKey, walkPackTree } from './pack-files.js'
import type { Watcher } from './watch.js'

/** The shortest gap between two polls, in ms. */
const POLL_MS = 500
/** A poll waits this many times as long as the last walk took: a large tree is polled less often. */
const POLL_BACKOFF = 20

export type TreeWatchOptions = {
  /** Quiet time after the last event before onChange, in ms. */
  debounceMs?: number
  /** What watches one folder for events (tests stand in one that delivers none, as some bind mounts do). */
  watchFolder?: (dir: string, onEvent: () => void) => FSWatcher
}

const watchFolder = (dir: string, onEvent: () => void): FSWatcher => fsWatch(dir, { persistent: false }, onEvent)

/**
 * Calls onChange once a burst of events in the tree has been quiet for `debounceMs` (an editor
 * or a formatter writing several files is one change). Two sources, as for the index (watch.ts):
 * - fs.watch on every folder of the tree, one each rather than `recursive` so node_modules and
 *   dot folders are never watched (inotify watches are a per-user budget), re-armed as folders
 *   come and go;
 * - a stat poll of every file, for bind mounts that deliver no inotify events (Docker Desktop,
 *   NFS, some VM shares) and folders fs.watch refuses.
 * `extra()` names files outside the walk's rules (the bundle map, modules outside the root),
 * read at each poll so the set can follow a reload.
 */
export function watchTree(root: string, extra: () => readonly string[], onChange: () => void, options: TreeWatchOptions = {}): Watcher {
  const { debounceMs = 200, watchFolder: watch = watchFolder } = options
  let timer: NodeJS.Timeout | undefined
  let poller: NodeJS.Timeout | undefined
  let closed = false
  const schedule = () => {
    if (closed) return
    clearTimeout(timer)
    timer = setTimeout(onChange, debounceMs)
  }

  const folders = new Map<string, FSWatcher | undefined>()
  const follow = (dirs: Set<string>) => {
    for (const [dir, watcher] of folders) {
      if (dirs.has(dir)) continue
      watcher?.close()
      folders.delete(dir)
    }
    for (const dir of dirs) {
      if (folders.has(dir)) continue
      let watcher: FSWatcher | undefined
      try {
        watcher = watch(dir, schedule)
        watcher.on('error', () => undefined) // the folder went away: the next poll drops it
      } catch {
        // A folder that cannot be watched is left to the poll; it is not retried each poll.
      }
      folders.set(dir, watcher)
    }
  }

  /** Walks and stamps the tree; watches its folders. The stamps' key, and how long it took. */
  const look = (): { key: string; ms: number } => {
    const started = performance.now()
    const files = extra()
    const tree = walkPackTree(root, files)
    follow(new Set([...tree.dirs, ...files.map((f) => dirname(f))]))
    return { key: stampsKey(stampFiles(tree.files)), ms: performance.now() - started }
  }

  // The first look is taken here, synchronously: a save landing before it must not become the baseline.
  let last = look()
  const poll = () => {
    if (closed) return
    const now = look()
    if (now.key !== last.key) schedule()
    last = now
    poller = setTimeout(poll, Math.max(POLL_MS, now.ms * POLL_BACKOFF))
    poller.unref()
  }
  poller = setTimeout(poll, Math.max(POLL_MS, last.ms * POLL_BACKOFF))
  poller.unref()

  return {
    close() {
      closed = true
      clearTimeout(timer)
      clearTimeout(poller)
      for (const watcher of folders.values()) watcher?.close()
      folders.clear()
    },
  }
}
