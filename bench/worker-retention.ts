// `node dist/bench/worker-retention.js`: how much RSS a process keeps after starting and
// ending worker threads, with no pack code and no host: 4 rounds of 200 workers (two at a
// time, each filling some heap, memMB 64), RSS after each round. What a round keeps the first
// time is the runtime's own (it differs by Node version); growth after it would be a leak.
import { Worker } from 'node:worker_threads'

const rss = (): number => Math.round(process.memoryUsage().rss / 1048576)
const CODE = `const { parentPort } = require('node:worker_threads'); const a = []; for (let i = 0; i < 2e5; i++) a.push({ i }); parentPort.postMessage('ready'); setInterval(() => {}, 1000)`

function start(): Promise<Worker> {
  return new Promise((resolve) => {
    const worker = new Worker(CODE, { eval: true, resourceLimits: { maxOldGenerationSizeMb: 64 } })
    worker.once('message', () => resolve(worker))
  })
}

const samples = [rss()]
for (let round = 0; round < 4; round++) {
  for (let i = 0; i < 100; i++) {
    const workers = await Promise.all([start(), start()])
    await Promise.all(workers.map((w) => w.terminate()))
  }
  await new Promise((r) => setTimeout(r, 1000))
  samples.push(rss())
}
console.log(`${process.version}: RSS MiB at start and after each 200 workers: ${samples.join(' → ')}`)
