// `node dist/bench/spawn-cost.js`: what starting a process costs the process that starts it,
// by its own resident memory. A start copies the starter's page tables, so the cost grows
// with its RSS: why strict calls' processes are started by a small spawner process and not by
// the front (src/pool/spawner/). Prints the starter's CPU per spawn() at a few sizes.
import { spawn } from 'node:child_process'

const STARTS = 40

async function costAt(ballastMB: number): Promise<string> {
  const ballast: Buffer[] = []
  for (let i = 0; i < ballastMB; i++) ballast.push(Buffer.alloc(1 << 20, 1))
  let cpuMs = 0
  for (let i = 0; i < STARTS; i++) {
    const before = process.cpuUsage()
    const child = spawn(process.execPath, ['-e', '0'], { stdio: ['ignore', 'ignore', 'ignore', 'ipc'] })
    const used = process.cpuUsage(before)
    cpuMs += (used.user + used.system) / 1000
    await new Promise((resolve) => child.once('exit', resolve))
  }
  const rss = Math.round(process.memoryUsage().rss / 1048576)
  ballast.length = 0
  return `RSS ${rss} MiB: ${(cpuMs / STARTS).toFixed(2)} ms of the starter's CPU per spawn()`
}

console.log(process.version)
for (const mb of [0, 150, 400]) console.log(await costAt(mb))
