// Finding 10: node:sqlite opens its files by path itself, past the permission model: under
// strict it wrote a database outside ctx.tmpDir and read one outside every folder the service
// may read (seen on Node 24.22 and 26.12).
import { existsSync } from 'node:fs'
import { join } from 'node:path'
import { DatabaseSync } from 'node:sqlite'
import { describe, expect, it } from 'vitest'
import { rawInvoke, scratchDir, STRICT, stillServes, wallsHost } from './walls-helpers.js'

describe('finding 10: under strict node:sqlite reaches no file outside what pack code may touch', () => {
  const host = wallsHost({ env: STRICT })

  it('a database outside ctx.tmpDir is neither created nor read', async () => {
    const writePath = join(scratchDir('sqlite-w'), 'escaped.db')
    const readPath = join(scratchDir('sqlite-r'), 'secrets.db')
    const db = new DatabaseSync(readPath)
    db.exec("create table secrets(value); insert into secrets values ('tenant-b-secret-for-finding-10')")
    db.close()
    const res = await rawInvoke(host.port, 'sqlite-escape', { writePath, readPath }, { tenantId: 'tenant-a', runId: 'attack' })
    expect.soft(existsSync(writePath), `${writePath} was created`).toBe(false)
    const output = 'error' in res ? res : res.body?.output
    expect.soft(JSON.stringify(output), 'what the attack read').not.toContain('tenant-b-secret-for-finding-10')
    await stillServes(host)
  })
})
