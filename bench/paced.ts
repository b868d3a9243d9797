// Evenly spaced calls from one caller, for the paced strict case. autocannon's rate limit
// (`overallRate`) sends each second's quota back to back and then waits for the next second:
// at "30/s" the host saw bursts of 30 calls at the unpaced rate, more than the strict spares
// can be started for, which is not the "strict call rate below the ceiling" the target is
// about. Here call i is due at start + i/rate; its latency counts from when it was due, so a
// call held up by a slow one before it is charged for the wait (no coordinated omission).
import { Agent, request } from 'node:http'
import type { LoadSpec } from './load.js'

export async function pacedCalls(
  spec: LoadSpec,
  seconds: number,
  rate: number,
  onResponse?: (status: number, ms: number) => void,
): Promise<{ errors: number }> {
  const agent = new Agent({ keepAlive: true, maxSockets: 1 })
  const url = new URL(`${spec.url}/v1/invoke`)
  const headers = { 'content-type': 'application/json', 'kindgi-pack-token': spec.token, 'content-length': Buffer.byteLength(spec.body) }
  const call = () =>
    new Promise<number>((resolve) => {
      const req = request({ host: url.hostname, port: url.port, path: url.pathname, method: 'POST', agent, headers }, (res) => {
        res.resume()
        res.once('end', () => resolve(res.statusCode ?? 0))
      })
      req.once('error', () => resolve(0))
      req.end(spec.body)
    })
  const started = performance.now()
  const count = Math.max(1, Math.floor(seconds * rate))
  let errors = 0
  try {
    for (let i = 0; i < count; i++) {
      const due = started + (i * 1000) / rate
      const wait = due - performance.now()
      if (wait > 0) await new Promise((r) => setTimeout(r, wait))
      const status = await call()
      if (status === 0) errors++
      else onResponse?.(status, performance.now() - due)
    }
  } finally {
    agent.destroy()
  }
  return { errors }
}
