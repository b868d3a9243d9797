// With --watch, a strict call's process loads the pack's files as its pack's boot read them
// (sent with its setup), not as they are on disk when the call comes: each strict call imports
// its module anew, so without this a save would reach the old pack's calls before any reload,
// and a broken save would break them while the old pack is said to keep serving.
import { fileURLToPath } from 'node:url'

let pinned: ReadonlyMap<string, string> | undefined

/** The pinned text of a file, by absolute path; undefined when it is not pinned (load it from disk). */
export function pinnedSource(path: string): string | undefined {
  return pinned?.get(path)
}

/** Installs the hook in this process; call before any pack module is imported. A file not pinned loads as ever. */
export function pinSources(sources: Readonly<Record<string, string>>): void {
  if (pinned !== undefined) return
  pinned = new Map(Object.entries(sources))
  const { registerHooks } = process.getBuiltinModule('node:module') as typeof import('node:module')
  registerHooks({
    load(url, context, nextLoad) {
      const source = url.startsWith('file:') ? pinned?.get(fileURLToPath(url)) : undefined
      const loaded = nextLoad(url, context)
      // The format as Node decides it (package.json "type", the extension); only the text is the boot's.
      return source === undefined ? loaded : { ...loaded, source, shortCircuit: true }
    },
  })
}
