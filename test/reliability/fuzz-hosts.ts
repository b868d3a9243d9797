// The two hosts wire fuzzing talks to (one unpinned, one pinned to a tenant) and the checks
// made after a run: the process is alive, logged no internal error, and every slot is free.
import { expect } from 'vitest'
import { BASIC_INDEX, invoke, spawnHost, type Host } from '../helpers/host.js'
import { PINNED_TENANT } from './generators.js'
import type { Hosts } from './driver.js'

export const FUZZ_CAP = 8

export async function startFuzzHosts(): Promise<Hosts> {
  // A body that never comes is answered 408 at the body timeout: shorter than the driver's wait
  // for an answer. (Node stops reading a request with Upgrade whose chunked body is malformed,
  // where without Upgrade it answers 400 at once: the 30-s default was past that wait.)
  const env = { KINDGI_PACK_SERVICE_MAX_CONCURRENCY: String(FUZZ_CAP), KINDGI_PACK_BODY_TIMEOUT_MS: '5000' }
  const [plain, pinned] = await Promise.all([
    spawnHost({ index: BASIC_INDEX, env }),
    spawnHost({ index: BASIC_INDEX, env: { ...env, KINDGI_PACK_TENANT_ID: PINNED_TENANT } }),
  ])
  return { plain, pinned }
}

/** Every one of the cap's slots takes a call at once: none was left held by a fuzzed request. */
export async function expectEverySlotFree(host: Host, tenant?: string): Promise<void> {
  const headers: Record<string, string> = tenant === undefined ? {} : { 'kindgi-tenant-id': tenant }
  // A slot frees when its worker does: give a terminated worker a moment to be replaced.
  for (let attempt = 0; ; attempt++) {
    const answers = await Promise.all(
      Array.from({ length: FUZZ_CAP }, () => invoke(host, 'sleep', { ms: 300 }, headers, { ctx: { tenantId: tenant ?? 't', runId: 'slots' } })),
    )
    const refused = answers.filter((a) => a.status === 503).length
    if (refused === 0 || attempt === 5) {
      expect(answers.map((a) => a.body)).toEqual(Array.from({ length: FUZZ_CAP }, () => ({ v: 2, kind: 'result', output: { slept: 300 } })))
      return
    }
    await new Promise((r) => setTimeout(r, 1_000))
  }
}

export function expectHealthyProcess(host: Host): void {
  expect(host.proc.exitCode).toBeNull()
  expect(host.lines.filter((l) => l.kind === 'internal-error')).toEqual([])
}
