// Starting and stopping the processes the benchmark measures (the host, the reference),
// reading their `listening` line and their memory from /proc. Loopback only.
import { execFileSync, spawn, type ChildProcess } from 'node:child_process'
import { readFileSync } from 'node:fs'
import { fileURLToPath } from 'node:url'
import { processTree } from './process-tree.js'

export const ROOT = fileURLToPath(new URL('../..', import.meta.url))
export const HOST_BIN = `${ROOT}dist/src/main.js`
export const REFERENCE_BIN = `${ROOT}dist/bench/reference-server.js`
/**
 * The bench pack's index; KINDGI_BENCH_INDEX names a copy elsewhere (side-by-side against a build
 * older than stop 39, whose strict processes cannot read this checkout's package.json above
 * bench/pack: copy bench/pack, with a package.json of `{"type":"module"}` in it).
 */
export const BENCH_INDEX = process.env.KINDGI_BENCH_INDEX ?? `${ROOT}bench/pack/index.json`
export const TOKEN = 'bench-token-0123456789'

// Whatever happens to the bench, the servers it started do not outlive it.
const live = new Set<ChildProcess>()
process.on('exit', () => {
  for (const p of live) p.kill('SIGKILL')
})

export type Server = {
  name: string
  proc: ChildProcess
  pid: number
  port: number
  url: string
  /** Milliseconds from spawn to the `listening` line. */
  startMs: number
  stop(): Promise<void>
}

export type StartOptions = {
  name: string
  bin: string
  index: string
  env?: Record<string, string>
  /** Node flags before the script (e.g. --cpu-prof). */
  nodeArgs?: string[]
  /** The node binary to run it with (default: the one running the bench). */
  node?: string
  timeoutMs?: number
}

/** This process's environment without KINDGI_* settings or NODE_OPTIONS (the host refuses some). */
export function cleanEnv(): Record<string, string> {
  const env: Record<string, string> = {}
  for (const [k, v] of Object.entries(process.env)) if (v !== undefined && !k.startsWith('KINDGI_') && k !== 'NODE_OPTIONS') env[k] = v
  return env
}

/**
 * Spawns a server and resolves once its `listening` line names the port. After that its
 * stderr (one `call` line per call for the host) is read and dropped, keeping only a short
 * tail to show if it dies.
 */
export function startServer(options: StartOptions): Promise<Server> {
  const env = { ...cleanEnv(), PORT: '0', KINDGI_PACK_SERVICE_TOKEN: TOKEN, ...options.env }
  const args = [...(options.nodeArgs ?? []), options.bin, '--index', options.index, '--host', '127.0.0.1']
  const started = performance.now()
  const proc = spawn(options.node ?? process.execPath, args, { env, stdio: ['ignore', 'ignore', 'pipe'] })
  live.add(proc)
  proc.once('exit', () => live.delete(proc))
  let tail = ''
  let listening = false
  const exited = new Promise<void>((resolve) => proc.once('exit', () => resolve()))
  return new Promise((resolve, reject) => {
    const timer = setTimeout(() => {
      proc.kill('SIGKILL')
      reject(new Error(`${options.name} did not listen within ${options.timeoutMs ?? 30_000} ms: ${tail}`))
    }, options.timeoutMs ?? 30_000)
    proc.once('exit', (code) => {
      if (listening) return
      clearTimeout(timer)
      reject(new Error(`${options.name} exited with ${code} before listening: ${tail}`))
    })
    proc.stderr!.on('data', (chunk: Buffer) => {
      tail = (tail + chunk.toString('utf8')).slice(-4096)
      if (listening) return
      const line = tail.split('\n').find((l) => l.includes('"listening"'))
      if (line === undefined) return
      const port = (JSON.parse(line) as { port: number }).port
      listening = true
      clearTimeout(timer)
      const startMs = performance.now() - started
      resolve({
        name: options.name,
        proc,
        pid: proc.pid as number,
        port,
        url: `http://127.0.0.1:${port}`,
        startMs,
        async stop() {
          if (proc.exitCode === null && proc.signalCode === null) {
            proc.kill('SIGTERM')
            const killer = setTimeout(() => proc.kill('SIGKILL'), 15_000)
            await exited
            clearTimeout(killer)
          }
        },
      })
    })
  })
}

/** Resident memory and OS thread count of a process, from /proc/<pid>/status. */
function ownStatus(pid: number): { rssBytes: number; threads: number } {
  const text = readFileSync(`/proc/${pid}/status`, 'utf8')
  const rss = /^VmRSS:\s+(\d+)\s+kB/m.exec(text)
  const threads = /^Threads:\s+(\d+)/m.exec(text)
  return { rssBytes: rss ? Number(rss[1]) * 1024 : Number.NaN, threads: threads ? Number(threads[1]) : Number.NaN }
}

/**
 * Resident memory and OS threads of a server's whole process tree (pack code runs in processes
 * below the front; RSS summed: pages two processes share count twice).
 */
export function procStatus(pid: number): { rssBytes: number; threads: number } {
  const tree = processTree(pid)
  if (tree.length === 0) throw new Error(`process ${pid} is gone`)
  let rssBytes = 0
  let threads = 0
  for (const p of tree) {
    try {
      const own = ownStatus(p)
      rssBytes += own.rssBytes
      threads += own.threads
    } catch {
      if (p === pid) throw new Error(`process ${pid} is gone`)
    }
  }
  return { rssBytes, threads }
}

let clockTicks: number | undefined

/**
 * CPU time (user + system, all threads) a server's whole process tree has used so far, in ms:
 * each live process's own and that of its children it has reaped (a strict call's process,
 * gone, counts in its spawner's). A difference of two readings is what the tree spent between them.
 */
export function procCpuMs(pid: number): number {
  clockTicks ??= Number(execFileSync('getconf', ['CLK_TCK'], { encoding: 'utf8' }).trim()) || 100
  let ticks = 0
  for (const p of processTree(pid)) {
    let stat: string
    try {
      stat = readFileSync(`/proc/${p}/stat`, 'utf8')
    } catch {
      continue // reaped meanwhile: its time is in its parent's reaped children
    }
    // Fields after the command name (which may hold spaces) start at field 3: utime, stime, cutime, cstime are 14 to 17.
    const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ')
    ticks += Number(fields[11]) + Number(fields[12]) + Number(fields[13]) + Number(fields[14])
  }
  return (ticks * 1000) / clockTicks
}

/** Samples a process's RSS every `everyMs` until stopped; answers the peak and the last sample. */
export function sampleRss(pid: number, everyMs = 200): { stop(): { peakBytes: number; lastBytes: number } } {
  let peak = 0
  let last = Number.NaN
  const take = () => {
    try {
      last = procStatus(pid).rssBytes
      if (last > peak) peak = last
    } catch {
      // the process is gone: keep what we have
    }
  }
  take()
  const timer = setInterval(take, everyMs)
  return {
    stop() {
      clearInterval(timer)
      take()
      return { peakBytes: peak, lastBytes: last }
    },
  }
}

/** One request, for the sanity checks before a run and for driving the pool by hand. */
export async function call(url: string, body: string): Promise<{ status: number; text: string }> {
  const res = await fetch(`${url}/v1/invoke`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', 'kindgi-pack-token': TOKEN },
    body,
  })
  return { status: res.status, text: await res.text() }
}

/** Milliseconds to spawn `node -e 0` and see it exit: what any Node service pays to start. */
export function nodeStartMs(): Promise<number> {
  const started = performance.now()
  const proc = spawn(process.execPath, ['-e', '0'], { stdio: 'ignore' })
  return new Promise((resolve) => proc.once('exit', () => resolve(performance.now() - started)))
}
