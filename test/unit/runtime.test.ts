// What the runtime can do is decided once, from its version and features (src/runtime.ts).
import { describe, expect, it } from 'vitest'
import { loadConfig } from '../../src/config.js'
import { describeRuntime, runtimeProblem } from '../../src/runtime.js'

describe('the runtime decides the version-specific flags in one place', () => {
  it('Node 24 and 26 take --permission; only Node 25 and later gate the network under it', () => {
    expect(describeRuntime({ node: '24.22.3' }, { typescript: 'strip' })).toEqual({
      version: 'v24.22.3',
      major: 24,
      permissionFlag: '--permission',
      permissionGatesNet: false,
      typeStripping: true,
    })
    expect(describeRuntime({ node: '26.12.1' }, { typescript: 'strip' })).toMatchObject({ permissionFlag: '--permission', permissionGatesNet: true })
    expect(describeRuntime({ node: '22.11.0' }, { typescript: false })).toMatchObject({ permissionFlag: '--experimental-permission', typeStripping: false })
  })
})

describe('a runtime older than Node 24', () => {
  it('is one config-invalid problem that names the version needed', () => {
    const old = describeRuntime({ node: '20.20.2' }, {})
    expect(runtimeProblem(old)).toBe('Node.js v20.20.2 is too old: kindgi-pack-host needs Node.js 24 or later (24 is the LTS, 26 the current release)')
    expect(loadConfig([], { KINDGI_PACK_SERVICE_TOKEN: 't' }, old)).toEqual({ kind: 'error', problems: [runtimeProblem(old)] })
  })

  it('the runtime the tests run on is supported', () => {
    expect(runtimeProblem()).toBeUndefined()
  })
})
