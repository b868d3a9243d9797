// The Idempotency-Key register sends: a deterministic version 5 UUID per registration
// (uuidV5 itself is the SDK's, tested with it).
import { describe, expect, it } from 'vitest'
import { registrationKey } from '../../src/cli/idempotency.js'

const id = { projectId: '2489e9ad-2ee2-4e00-8ec9-32d5f69181c0', packId: 'acme', toolId: 'acme.echo', version: '1.0.0', artifactVersion: '20261130.3' }

describe('the registration key', () => {
  it('is a version 5 UUID, the same every time for the same registration', () => {
    const key = registrationKey(id)
    expect(key).toMatch(/^[0-9a-f]{8}-[0-9a-f]{4}-5[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/)
    expect(registrationKey({ ...id })).toBe(key)
  })
  it('changes with the project, the pack, the tool, its version and the artifactVersion', () => {
    const keys = new Set([
      registrationKey(id),
      registrationKey({ ...id, projectId: '2489e9ad-2ee2-4e00-8ec9-32d5f69181c1' }),
      registrationKey({ ...id, packId: 'other' }),
      registrationKey({ ...id, toolId: 'acme.other' }),
      registrationKey({ ...id, version: '1.0.1' }),
      registrationKey({ ...id, version: undefined }),
      registrationKey({ ...id, artifactVersion: '20261130.4' }),
    ])
    expect(keys.size).toBe(7)
  })
  it('does not change with the case of the project UUID', () => {
    expect(registrationKey({ ...id, projectId: id.projectId.toUpperCase() })).toBe(registrationKey(id))
  })
  it('cannot be forged by moving text between parts (they are a JSON array, not a joined string)', () => {
    expect(registrationKey({ ...id, packId: 'acme.x', toolId: 'y' })).not.toBe(registrationKey({ ...id, packId: 'acme', toolId: 'x.y' }))
  })
})
