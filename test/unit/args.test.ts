// The command line, read one way by serve and the subcommands.
import { describe, expect, it } from 'vitest'
import { parseArgv } from '../../src/args.js'

const SPEC = { flags: ['index', 'api'], switches: ['json'] } as const

describe('command-line arguments (serve and subcommands alike)', () => {
  it('takes --flag value, --flag=value and switches', () => {
    expect(parseArgv(['--index', 'i.json', '--api=http://x', '--json'], SPEC)).toEqual({
      flags: { index: 'i.json', api: 'http://x' },
      switches: new Set(['json']),
      problems: [],
    })
  })
  it('collects every bad argument: stray words, unknown options (and their values), missing values, values on switches', () => {
    const parsed = parseArgv(['stray', '--colour', 'blue', '--index', '--json=yes', '--api='], { ...SPEC, hint: 'see --help' })
    expect(parsed.problems).toEqual([
      'Unexpected argument "stray": see --help',
      'Unknown option --colour: see --help',
      '--index needs a value',
      '--json takes no value',
      '--api needs a value',
    ])
  })
})
