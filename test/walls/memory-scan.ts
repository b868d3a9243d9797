// Reads the memory of the processes that run pack code (/proc/<pid>/maps, then
// /proc/<pid>/mem region by region; needs root or ptrace rights over them) and says which of
// the given byte strings occur in it.
//
// Which processes run pack code: those of the host's process tree whose command line
// contains PACK_PROCESS_MARKER (`--kindgi-pack-process` unless KINDGI_WALLS_PACK_MARKER says
// otherwise): the wall of issue 16 is expected to start its pack processes with such an
// argument. Until one does, pack code runs in worker threads of the serving process, so the
// fallback is every process of the tree that has a thread named `WorkerThread` (Node's name
// for a worker thread): today the front itself (non-strict), or the served process under
// strict, never the launcher. The test's canary, held by pack code, proves the processes found
// are the right ones: if the canary is not found, the marker points at the wrong processes.
import { closeSync, openSync, readdirSync, readFileSync, readSync } from 'node:fs'
import { cmdline, processTree } from './walls-helpers.js'

export const PACK_PROCESS_MARKER = process.env.KINDGI_WALLS_PACK_MARKER ?? '--kindgi-pack-process'

function hasWorkerThread(pid: number): boolean {
  try {
    return readdirSync(`/proc/${pid}/task`).some((tid) => {
      try {
        return readFileSync(`/proc/${pid}/task/${tid}/comm`, 'utf8').trim() === 'WorkerThread'
      } catch {
        return false
      }
    })
  } catch {
    return false
  }
}

export type PackProcesses = { pids: number[]; how: 'marker' | 'worker-threads' }

export function packCodeProcesses(root: number): PackProcesses {
  const tree = processTree(root)
  const marked = tree.filter((pid) => cmdline(pid).includes(PACK_PROCESS_MARKER))
  if (marked.length > 0) return { pids: marked, how: 'marker' }
  return { pids: tree.filter(hasWorkerThread), how: 'worker-threads' }
}

const CHUNK = 16 * 1024 * 1024

/** Which of `needles` (by index) occur anywhere in the readable memory of `pid`, and how many bytes were read. */
export function scanMemory(pid: number, needles: Buffer[]): { found: Set<number>; bytes: number } {
  const found = new Set<number>()
  let bytes = 0
  const longest = Math.max(...needles.map((n) => n.length))
  const maps = readFileSync(`/proc/${pid}/maps`, 'utf8').trim().split('\n')
  const fd = openSync(`/proc/${pid}/mem`, 'r')
  const buf = Buffer.alloc(CHUNK + longest)
  try {
    for (const line of maps) {
      const [range, perms, , , , path = ''] = line.split(/\s+/)
      if (!perms?.startsWith('r') || path === '[vvar]' || path === '[vsyscall]' || path === '[vvar_vclock]') continue
      const [start, end] = range!.split('-').map((h) => parseInt(h, 16)) as [number, number]
      let carry = 0
      for (let at = start; at < end; at += CHUNK) {
        const want = Math.min(CHUNK, end - at)
        let n: number
        try {
          n = readSync(fd, buf, carry, want, at)
        } catch {
          break // a region that cannot be read (guard pages, gone since the maps were read)
        }
        bytes += n
        const view = buf.subarray(0, carry + n)
        needles.forEach((needle, i) => {
          if (!found.has(i) && view.includes(needle)) found.add(i)
        })
        // Keep the tail, so a needle split across two chunks is still seen.
        carry = Math.min(longest - 1, view.length)
        view.copy(buf, 0, view.length - carry)
        if (n < want) break
      }
    }
  } finally {
    closeSync(fd)
  }
  return { found, bytes }
}

/** A string's bytes as V8 may hold them: one byte a character, or UTF-16. */
export function encodings(text: string): Buffer[] {
  return [Buffer.from(text, 'latin1'), Buffer.from(text, 'utf16le')]
}
