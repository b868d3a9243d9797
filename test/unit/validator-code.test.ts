// A pack's schemas are judged as JSON Schema before they are compiled (src/ajv.ts checkSchema):
// Ajv's compiler alone accepts some schemas the draft's meta-schema refuses, and knows nothing
// of a $schema it does not have. Each is one boot problem naming Ajv's own reason. The
// service's own schemas are compiled unjudged: this is where they are judged.
import { describe, expect, it } from 'vitest'
import { checkSchema } from '../../src/ajv.js'
import { toolManifestSchema } from '../../src/cli/tool-manifest-schema.js'
import { packIndexSchema } from '../../src/pack-index-schema.js'
import type { RunnableEntry } from '../../src/protocol/runnable-entry.js'
import { compileValidators } from '../../src/validator-code.js'
import { instantiate } from '../../workers/validators.js'

function tool(id: string, input: object): RunnableEntry {
  return {
    key: `tool:${id}@1.0.0`,
    target: 'tool',
    id,
    version: '1.0.0',
    modulePath: 'tools/t.js',
    absPath: '/nowhere/tools/t.js',
    input,
    output: { type: 'object' },
    posture: 'none',
    networkNone: false,
    pauses: false,
    storesFiles: false,
    readsFiles: false,
  }
}

describe("a pack's schemas are judged by the draft's meta-schema before they compile", () => {
  it('a schema the compiler alone would take but the meta-schema refuses is a problem naming why', () => {
    const { problems } = compileValidators([tool('negative', { type: 'string', minLength: -1 })])
    expect(problems).toEqual(['Tool "negative" input schema does not compile: schema is invalid: data/minLength must be >= 0'])
  })

  it('a $schema other than draft 2020-12 is a problem naming it', () => {
    const { problems } = compileValidators([tool('draft7', { $schema: 'http://json-schema.org/draft-07/schema#', type: 'object' })])
    expect(problems).toEqual(['Tool "draft7" input schema does not compile: no schema with key or ref "http://json-schema.org/draft-07/schema#"'])
  })

  it('valid schemas compile, in every pack of a process, into validators that judge as declared', () => {
    for (const round of [1, 2]) {
      const { entries, problems } = compileValidators([
        tool(`t${round}`, { type: 'object', properties: { n: { type: 'integer', minimum: 1 } }, required: ['n'] }),
      ])
      expect(problems).toEqual([])
      const validate = instantiate(entries[0]?.validators?.input as string)
      expect(validate({ n: 2 })).toBe(true)
      expect(validate({ n: 0 })).toBe(false)
    }
  })
})

describe("the service's own schemas", () => {
  it('are valid JSON Schema (draft 2020-12): the index schema and the ToolManifest schema', () => {
    expect(() => checkSchema(packIndexSchema)).not.toThrow()
    expect(() => checkSchema(toolManifestSchema)).not.toThrow()
  })
})
