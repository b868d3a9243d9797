// A warm pack process's lines to the front, sealed (src/protocol/line-seal.ts): only a line
// its own code wrote, whole and untouched, is read.
import { describe, expect, it } from 'vitest'
import { SEAL_CHARS, sealLine, unsealedLine } from '../../src/protocol/line-seal.js'

const KEY = 'a-key-the-front-gave'
const TEXT = '{"type":"batch","items":[{"type":"answer","callId":7}]}'

describe("a line is read only as the process's own code sealed it", () => {
  it('a sealed line gives back its text', () => {
    const line = sealLine(KEY, TEXT)
    expect(line.length).toBe(SEAL_CHARS + TEXT.length)
    expect(unsealedLine(KEY, line)).toBe(TEXT)
  })

  it('is refused: without a seal, under another key, cut short, or with a write spliced into it', () => {
    const line = sealLine(KEY, TEXT)
    expect(unsealedLine(KEY, TEXT)).toBeUndefined()
    expect(unsealedLine('another-key', line)).toBeUndefined()
    expect(unsealedLine(KEY, line.slice(0, -1))).toBeUndefined()
    const at = SEAL_CHARS + 30
    expect(unsealedLine(KEY, `${line.slice(0, at)}"},{"type":"answer","callId":8${line.slice(at)}`)).toBeUndefined()
    expect(unsealedLine(KEY, '')).toBeUndefined()
  })
})
