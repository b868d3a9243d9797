// The API token register sends: where it comes from, and that it is never shown.
import { writeFileSync } from 'node:fs'
import { join } from 'node:path'
import { describe, expect, it } from 'vitest'
import { readApiToken } from '../../src/cli/api-token.js'
import { tempDirs } from '../helpers/temp-dir.js'

describe('the API token', () => {
  const tempDir = tempDirs()
  const dir = tempDir('kph-token-')
  const file = join(dir, 'token')
  writeFileSync(file, '  from-file\n')

  it('comes from KINDGI_API_TOKEN, trimmed', () => {
    expect(readApiToken(undefined, { KINDGI_API_TOKEN: ' tok \n' })).toEqual({ kind: 'ok', token: 'tok' })
  })
  it('or from KINDGI_API_TOKEN_FILE, trimmed; both together are refused', () => {
    expect(readApiToken(undefined, { KINDGI_API_TOKEN_FILE: file })).toEqual({ kind: 'ok', token: 'from-file' })
    expect(readApiToken(undefined, { KINDGI_API_TOKEN_FILE: file, KINDGI_API_TOKEN: 'tok' })).toMatchObject({
      kind: 'error',
      problem: expect.stringContaining('not both'),
    })
  })
  it('--token-file wins over the environment', () => {
    expect(readApiToken(file, { KINDGI_API_TOKEN: 'tok', KINDGI_API_TOKEN_FILE: '/nowhere' })).toEqual({ kind: 'ok', token: 'from-file' })
  })
  it('a missing, unreadable, empty or non-printable token is a problem that never shows the token', () => {
    expect(readApiToken(undefined, {})).toMatchObject({ kind: 'error', problem: expect.stringContaining('KINDGI_API_TOKEN') })
    expect(readApiToken(join(dir, 'absent'), {})).toMatchObject({ kind: 'error', problem: expect.stringContaining('cannot be read') })
    expect(readApiToken(undefined, { KINDGI_API_TOKEN: '   ' })).toEqual({ kind: 'error', problem: 'KINDGI_API_TOKEN is empty' })
    const bad = readApiToken(undefined, { KINDGI_API_TOKEN: 'has space' })
    expect(bad).toMatchObject({ kind: 'error' })
    expect(JSON.stringify(bad)).not.toContain('has space')
  })
})
