// `node dist/bench/reload-latency.js [--container IMAGE]`: how long --watch takes from a save
// of a module to the `reloaded` line (issue 18), on a copy of examples/hello-pack: ten saves of
// its TypeScript tool, one at a time, the median and the spread printed. The time of a save is
// taken just before its rename, the line's own `time` is when it was logged (the container
// shares this machine's clock), so reading the log adds nothing. On the host the service runs
// as `npm start` runs it, in each posture; with --container, the image runs it as
// `docker compose up` does (strict, read-only root, the pack bind-mounted read-only).
import { spawn, spawnSync, type ChildProcess } from 'node:child_process'
import { chmodSync, cpSync, mkdtempSync, readdirSync, readFileSync, renameSync, statSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { fileURLToPath } from 'node:url'

const ROOT = fileURLToPath(new URL('../..', import.meta.url))
const SAVES = 10
const TOKEN = 'bench-token-0123456789'

type Line = { kind?: string; time?: string; [field: string]: unknown }
type Served = { lines: Line[]; waitFor(kind: string, after: number, timeoutMs?: number): Promise<Line>; stop(): void }

/** Follows a process's JSON log lines (stdout and stderr: `docker logs -f` splits them as the container wrote them). */
function follow(proc: ChildProcess, stop: () => void): Served {
  const lines: Line[] = []
  const waiters: Array<() => void> = []
  const take = (stream: NodeJS.ReadableStream) => {
    let buf = ''
    stream.on('data', (d: Buffer) => {
      buf += d.toString()
      for (let nl = buf.indexOf('\n'); nl !== -1; nl = buf.indexOf('\n')) {
        const raw = buf.slice(0, nl)
        buf = buf.slice(nl + 1)
        try {
          lines.push(JSON.parse(raw) as Line)
        } catch {
          // not a record
        }
        for (const w of waiters.splice(0)) w()
      }
    })
  }
  take(proc.stdout!)
  take(proc.stderr!)
  const waitFor = (kind: string, after: number, timeoutMs = 30_000) =>
    new Promise<Line>((resolve, reject) => {
      const timer = setTimeout(() => reject(new Error(`no ${kind} line within ${timeoutMs} ms: ${JSON.stringify(lines.slice(-5))}`)), timeoutMs)
      const check = () => {
        const found = lines.slice(after).find((l) => l.kind === kind || (kind === 'reloaded' && l.kind === 'boot-failed'))
        if (found !== undefined) {
          clearTimeout(timer)
          resolve(found)
        } else waiters.push(check)
      }
      check()
    })
  return { lines, waitFor, stop }
}

/** A copy of the example anyone can read (the container's user is 10001). */
function examplePack(): string {
  const dir = mkdtempSync(join(tmpdir(), 'kph-reload-bench-'))
  cpSync(join(ROOT, 'examples/hello-pack'), dir, { recursive: true })
  const open = (path: string) => {
    chmodSync(path, statSync(path).isDirectory() ? 0o755 : 0o644)
    if (statSync(path).isDirectory()) for (const name of readdirSync(path)) open(join(path, name))
  }
  open(dir)
  return dir
}

async function measure(served: Served, pack: string): Promise<number[]> {
  await served.waitFor('listening', 0, 60_000)
  const tool = join(pack, 'tools/greet.ts')
  const original = readFileSync(tool, 'utf8')
  const took: number[] = []
  for (let i = 1; i <= SAVES; i++) {
    await new Promise((r) => setTimeout(r, 1_500)) // the last reload's old pool retired, the poll settled
    const seen = served.lines.length
    writeFileSync(`${tool}~`, original.replace('`${input.greeting}, ${input.name}!`', `\`\${input.greeting}, \${input.name}! (save ${i})\``))
    const saved = Date.now()
    renameSync(`${tool}~`, tool)
    const line = await served.waitFor('reloaded', seen)
    if (line.kind !== 'reloaded') throw new Error(`save ${i}: ${JSON.stringify(line)}`)
    took.push(Date.parse(line.time as string) - saved)
  }
  return took
}

function summary(what: string, ms: number[]): string {
  const sorted = [...ms].sort((a, b) => a - b)
  const median = (sorted[4]! + sorted[5]!) / 2
  return `${what.padEnd(44)} median ${median.toFixed(0).padStart(4)} ms  (min ${sorted[0]}, max ${sorted.at(-1)}; ${ms.join(' ')})`
}

async function onHost(posture: string): Promise<string> {
  const pack = examplePack()
  const proc = spawn(process.execPath, [join(ROOT, 'dist/src/main.js'), '--index', join(pack, 'index.json'), '--host', '127.0.0.1', '--watch'], {
    env: { PATH: process.env.PATH, HOME: process.env.HOME, PORT: '0', KINDGI_PACK_SERVICE_TOKEN: TOKEN, KINDGI_PACK_SANDBOX: posture },
    stdio: ['ignore', 'pipe', 'pipe'],
  })
  const served = follow(proc, () => proc.kill('SIGTERM'))
  try {
    return summary(`host, ${posture}, ${process.version}`, await measure(served, pack))
  } finally {
    served.stop()
  }
}

async function inContainer(image: string): Promise<string> {
  const pack = examplePack()
  const docker = process.env.DOCKER ?? 'docker'
  const run = spawnSync(
    docker,
    [
      'run',
      '-d',
      '--read-only',
      '--tmpfs',
      '/tmp:rw,noexec,nosuid,nodev,size=64m,mode=1777',
      '--cap-drop=ALL',
      '--security-opt=no-new-privileges=true',
      '--init',
      '--memory=1g',
      '--pids-limit=256',
      '--network',
      'none',
      '-e',
      'KINDGI_PACK_SERVICE_TOKEN_FILE=',
      '-e',
      `KINDGI_PACK_SERVICE_TOKEN=${TOKEN}`,
      '-v',
      `${pack}:/app/pack:ro`,
      image,
      'node',
      'dist/src/main.js',
      '--module-root',
      '/app/pack',
      '--watch',
    ],
    { encoding: 'utf8' },
  )
  if (run.status !== 0) throw new Error(`docker run: ${run.stderr}`)
  const id = run.stdout.trim()
  const logs = spawn(docker, ['logs', '-f', id], { stdio: ['ignore', 'pipe', 'pipe'] })
  const served = follow(logs, () => {
    logs.kill()
    spawnSync(docker, ['rm', '-f', id])
  })
  try {
    const node = spawnSync(docker, ['exec', id, 'node', '--version'], { encoding: 'utf8' }).stdout.trim()
    return summary(`container (${image}), strict, ${node}`, await measure(served, pack))
  } finally {
    served.stop()
  }
}

const at = process.argv.indexOf('--container')
if (at !== -1) console.log(await inContainer(process.argv[at + 1] ?? 'kindgi-pack-host:container-test'))
else for (const posture of ['none', 'strict']) console.log(await onHost(posture))
