// Found by a red-team session in stop 33, past Node's permission model under strict: V8 opens
// the files its tracing flags name itself (v8.setFlagsFromString), so a strict call wrote where
// its own writeFileSync is refused (another tenant's later call read what it left; the host's
// bundles and log were overwritten); and on Node 24, which has no network gate, a network-none
// tool connected to a unix socket through a raw Pipe handle, past the network guard; and a
// descriptor the service inherited from its own parent reached every strict process.
import { closeSync, existsSync, mkdirSync, openSync, readdirSync, readFileSync, writeFileSync } from 'node:fs'
import { createServer, type Socket } from 'node:net'
import { join } from 'node:path'
import { describe, expect, it } from 'vitest'
import { answeredByHost, landlockOf, rawInvoke, scratchDir, STRICT, stillServes, wallsPackWith, withHost } from './walls-helpers.js'

// Each wall here is the kernel's (workers/native/landlock-exec.c); Node 26's permission model
// refuses the unix socket too, but not the rest.
const { kernelLacksIt } = landlockOf('walls 22')

describe.skipIf(kernelLacksIt)('stop 33: V8 writes no file a strict call may not write', () => {
  it('under strict, code traces and Turbofan traces named by V8 flags are not written outside ctx.tmpDir', async () => {
    const dir = scratchDir('v8-files')
    const file = join(dir, 'traces.txt')
    const traces = join(dir, 'turbo')
    mkdirSync(traces)
    // Started in that folder too: V8 writes a Turbofan trace into its process's working folder.
    await withHost({ env: STRICT, cwd: dir, ...wallsPackWith(['v8-file-write']) }, async (host) => {
      const marker = '|MARKER-tenant-a-secret|'
      const res = await rawInvoke(host.port, 'v8-file-write', { file, dir: traces, marker }, { tenantId: 'tenant-a', runId: 'attack' })
      // Its own writeFileSync is refused by the permission model (before the wall it answered
      // so, and V8 wrote); refused the file by the kernel, V8 stops its process at a trap: the
      // call answers handler-throw, and only it.
      expect.soft(answeredByHost(res), 'the attack call answered by the host').toBe(true)
      expect
        .soft('error' in res ? res : res.body, "the attack's answer")
        .toSatisfy((body: { kind?: string; code?: string; output?: { direct?: string } }) =>
          body.kind === 'error' ? body.code === 'handler-throw' : body.output?.direct === 'ERR_ACCESS_DENIED',
        )
      expect.soft(existsSync(file) ? readFileSync(file, 'utf8').includes(marker) : false, 'the marker in the file V8 was told to write').toBe(false)
      expect.soft(readdirSync(traces), 'files V8 was told to make').toEqual([])
      expect
        .soft(
          readdirSync(dir).filter((name) => name !== 'traces.txt'),
          'files V8 made in the working folder',
        )
        .toEqual(['turbo'])
      await stillServes(host)
    })
  })
})

describe.skipIf(kernelLacksIt)('stop 33: a network-none strict call connects to no unix socket', () => {
  it('under strict, a raw Pipe handle reaches no unix socket the test listens on', async () => {
    const path = join(scratchDir('unix'), 'listener.sock')
    const connections: Socket[] = []
    const server = createServer((socket) => {
      connections.push(socket)
      socket.end('reply from outside the sandbox\n')
    })
    await new Promise<void>((resolve) => server.listen(path, resolve))
    try {
      await withHost({ env: STRICT, ...wallsPackWith(['unix-connect']) }, async (host) => {
        const res = await rawInvoke(host.port, 'unix-connect', { path, send: 'ping\n' }, { tenantId: 'tenant-a', runId: 'attack' })
        expect.soft('error' in res ? res : res.body?.output?.connected, "the attack's connect").toBe(false)
        expect.soft(connections.length, 'connections the listener took').toBe(0)
        await stillServes(host)
      })
    } finally {
      for (const socket of connections) socket.destroy()
      await new Promise((resolve) => server.close(resolve))
    }
  })
})

describe.skipIf(kernelLacksIt)('stop 33: a descriptor the service inherited reaches no strict call', () => {
  it('under strict, a file its parent left open in the service (fd 20) cannot be read by a call', async () => {
    const file = join(scratchDir('inherited'), 'supervisor-secret')
    const marker = 'SUPERVISOR-SECRET-0123'
    writeFileSync(file, `${marker}\n`)
    const fd = openSync(file, 'r')
    try {
      await withHost({ env: STRICT, moreFds: [...Array(17).fill('ignore'), fd], ...wallsPackWith(['inherited-fd']) }, async (host) => {
        const res = await rawInvoke(host.port, 'inherited-fd', { marker }, { tenantId: 'tenant-a', runId: 'attack' })
        expect.soft('error' in res ? res : res.body, "the attack's answer").toEqual({ v: 2, kind: 'result', output: { found: null } })
        await stillServes(host)
      })
    } finally {
      closeSync(fd)
    }
  })
})
