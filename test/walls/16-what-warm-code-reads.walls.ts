// Found while building the wall: warm pack processes run as the front's user, and the kernel
// lets a process read /proc/<pid>/environ of another process of its user. The front's environ
// is the environment it was started with: a token passed as KINDGI_PACK_SERVICE_TOKEN was
// readable there by a `none` tool, and a token file by any tool of a warm posture.
import { existsSync, mkdtempSync, realpathSync, rmSync, writeFileSync } from 'node:fs'
import { join } from 'node:path'
import { describe, expect, it, onTestFinished } from 'vitest'
import { FIXTURES, TOKEN } from '../helpers/host.js'
import { rawInvoke, scratchDir, stillServes, wallsPackWith, withHost } from './walls-helpers.js'

const PACK = join(FIXTURES, 'walls-pack/index.json')

describe("finding 16: warm pack code reads neither the front's environment nor the token file", () => {
  for (const posture of ['none', 'context-isolated'] as const) {
    it(`under ${posture}, the environ of every process it can name holds no token passed as a variable`, async () => {
      await withHost({ env: { KINDGI_PACK_SANDBOX: posture }, ...wallsPackWith(['read-proc']) }, async (host) => {
        const res = await rawInvoke(host.port, 'read-proc', {}, { tenantId: 'tenant-a', runId: 'attack' })
        expect.soft('error' in res ? res : res.body?.kind, "the attack's answer").toBe('result')
        // It did read something (its own environ), so the scan ran; the front's was refused.
        expect.soft(Object.keys(('error' in res ? {} : res.body?.output?.results) ?? {}).length, 'paths it tried').toBeGreaterThan(3)
        expect.soft(JSON.stringify('error' in res ? res : res.body), 'what it read').not.toContain(TOKEN)
        await stillServes(host)
      })
    })
  }

  it('under none, a token file under /run cannot be read through the /var/run link either', async ({ skip }) => {
    if (!existsSync('/var/run') || realpathSync('/var/run') !== '/run') skip()
    const dir = mkdtempSync('/run/kph-walls-token-')
    onTestFinished(() => rmSync(dir, { recursive: true, force: true }))
    const file = join(dir, 'token')
    writeFileSync(file, `${TOKEN}\n`)
    await withHost({ index: PACK, env: { KINDGI_PACK_SERVICE_TOKEN: undefined, KINDGI_PACK_SERVICE_TOKEN_FILE: file } }, async (host) => {
      for (const path of [file, `/var${file}`]) {
        const res = await rawInvoke(host.port, 'read-file', { path }, { tenantId: 'tenant-a', runId: 'attack' })
        expect.soft('error' in res ? res : res.body?.output, `the attack at ${path}`).toEqual({ denied: 'ERR_ACCESS_DENIED' })
      }
      await stillServes(host)
    })
  })

  // Stop 33 (a red-team session): under the permission model a worker thread may read what lies
  // below its process's working directory, where the main thread may not; warm calls run in
  // worker threads, and a service started in its token file's folder (or in /) had them read it.
  for (const posture of ['none', 'context-isolated'] as const) {
    it(`under ${posture}, a service started in its token file's folder: the token file cannot be read`, async () => {
      const dir = scratchDir('token-cwd')
      const file = join(dir, 'token')
      writeFileSync(file, `${TOKEN}\n`)
      const env = { KINDGI_PACK_SANDBOX: posture, KINDGI_PACK_SERVICE_TOKEN: undefined, KINDGI_PACK_SERVICE_TOKEN_FILE: file }
      await withHost({ env, cwd: dir, ...wallsPackWith(['read-file']) }, async (host) => {
        for (const path of [file, 'token']) {
          const res = await rawInvoke(host.port, 'read-file', { path }, { tenantId: 'tenant-a', runId: 'attack' })
          expect.soft(JSON.stringify('error' in res ? res : res.body), `the attack at ${path}`).not.toContain(TOKEN)
          expect.soft('error' in res ? res : res.body?.kind, `the attack at ${path} was answered`).toBe('result')
        }
        await stillServes(host)
      })
    })
  }

  it('under none, a token file cannot be read', async () => {
    const dir = scratchDir('token')
    const file = join(dir, 'token')
    writeFileSync(file, `${TOKEN}\n`)
    await withHost({ index: PACK, env: { KINDGI_PACK_SERVICE_TOKEN: undefined, KINDGI_PACK_SERVICE_TOKEN_FILE: file } }, async (host) => {
      const res = await rawInvoke(host.port, 'read-file', { path: file }, { tenantId: 'tenant-a', runId: 'attack' })
      expect.soft('error' in res ? res : res.body?.output, 'the attack').toEqual({ denied: 'ERR_ACCESS_DENIED' })
      await stillServes(host)
    })
  })
})
