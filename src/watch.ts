// Tells when one file may have changed, for --watch. Only the signal: what changed and what
// to do about it is the caller's business (it compares the bytes itself).
import { realpathSync, stat, statSync, watch, type FSWatcher } from 'node:fs'
import { basename, dirname } from 'node:path'

export type Watcher = { close(): void }

/** Polling interval for the stat fallback, in ms. */
const POLL_MS = 1_000

/**
 * Calls onChange once a burst of events around `path` has been quiet for `debounceMs`.
 * Two sources, because each misses cases the other sees:
 * - fs.watch on the folder of the file the path resolves to (a symlink is followed once, at
 *   start): editors save by writing a new file and renaming it over the old one, which a
 *   watch on the file's own inode stops seeing after the first save;
 * - a stat poll of the path itself: bind mounts from another machine (Docker Desktop, NFS)
 *   do not always deliver inotify events, the poll follows a symlink that is repointed, and
 *   where fs.watch is refused (a folder the process may not read) the poll is all there is.
 *   Its first stat is taken here, synchronously: fs.watchFile takes its own asynchronously,
 *   and a save landing before it became the baseline and was never seen.
 */
export function watchPath(path: string, onChange: () => void, debounceMs = 200): Watcher {
  let timer: NodeJS.Timeout | undefined
  let closed = false
  const schedule = () => {
    if (closed) return
    clearTimeout(timer)
    timer = setTimeout(onChange, debounceMs)
  }

  let target = path
  try {
    target = realpathSync(path)
  } catch {
    // Not there yet: watch the folder it would be in.
  }
  const name = basename(target)
  let folder: FSWatcher | undefined
  try {
    folder = watch(dirname(target), { persistent: false }, (_event, filename) => {
      if (filename === null || filename.toString() === name) schedule()
    })
    folder.on('error', () => undefined) // the folder went away: the poll still runs
  } catch {
    // A folder that cannot be watched leaves the poll.
  }
  let last = fingerprint(path)
  let polling = false
  const poll = setInterval(() => {
    if (polling) return
    polling = true
    stat(path, (err, now) => {
      polling = false
      const seen = err === null ? `${now.ino}:${now.size}:${now.mtimeMs}` : 'missing'
      if (seen === last) return
      last = seen
      schedule()
    })
  }, POLL_MS)
  poll.unref()

  return {
    close() {
      closed = true
      clearTimeout(timer)
      clearInterval(poll)
      folder?.close()
    },
  }
}

/** What the poll compares: inode, size and modification time, or that the path is missing. */
function fingerprint(path: string): string {
  try {
    const now = statSync(path)
    return `${now.ino}:${now.size}:${now.mtimeMs}`
  } catch {
    return 'missing'
  }
}
