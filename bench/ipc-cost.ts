// `node dist/bench/ipc-cost.js`: what one call's round trip over Node's IPC channel costs, the
// hop a warm call now takes between the front and its pack process: 20,000 sequential round
// trips of a call-sized message and its answer, with JSON and with advanced serialization.
import { fork } from 'node:child_process'
import { fileURLToPath } from 'node:url'

const ANSWER = { kind: 'result', result: { outcome: 'ok', body: '{"v":2,"kind":"result","output":{"echo":"hello world","n":1}}' } }
const TASK = {
  type: 'call',
  callId: 0,
  key: 'tool:echo@1.0.0',
  ids: { tenantId: 't', runId: 'r' },
  body: JSON.stringify({
    v: 2,
    kind: 'invoke',
    tool: { id: 'echo' },
    input: { echo: 'hello world', n: 1 },
    ctx: { tenantId: 't', runId: 'r', requestId: 'abc' },
  }),
}
const ROUND_TRIPS = 20_000

type Batch = { items: Array<{ task: { callId: number } }> }

if (process.argv[2] === 'child') {
  process.on('message', (m: Batch) => process.send!({ type: 'batch', items: m.items.map((i) => ({ type: 'answer', callId: i.task.callId, answer: ANSWER })) }))
} else {
  for (const serialization of ['json', 'advanced', 'json', 'advanced'] as const) {
    const child = fork(fileURLToPath(import.meta.url), ['child'], { serialization })
    let got = 0
    const t0 = performance.now()
    const c0 = process.cpuUsage()
    await new Promise<void>((resolve) => {
      child.on('message', () => {
        if (++got === ROUND_TRIPS) return resolve()
        child.send({ type: 'batch', items: [{ type: 'run', task: { ...TASK, callId: got } }] })
      })
      child.send({ type: 'batch', items: [{ type: 'run', task: TASK }] })
    })
    const cpu = process.cpuUsage(c0)
    console.log(
      `${serialization}: ${(((performance.now() - t0) * 1000) / ROUND_TRIPS).toFixed(1)} µs a round trip, ${((cpu.user + cpu.system) / ROUND_TRIPS).toFixed(1)} µs of the sender's CPU`,
    )
    child.kill()
  }
}
