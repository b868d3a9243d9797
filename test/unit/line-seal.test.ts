// A warm pack process's lines to the front, sealed (src/protocol/line-seal.ts): only a line
// its own code wrote, whole and untouched, is read.
import { describe, expect, it } from 'vitest'
import { SEAL_CHARS, sealLine, unsealedLine, WHOLE_WRITE_BYTES } from '../../src/protocol/line-seal.js'

const KEY = 'a-key-the-front-gave'
const SHORT = '{"type":"batch","items":[{"type":"answer","callId":7}]}'
const LONG = `{"type":"batch","items":[{"type":"answer","callId":7,"body":"${'a'.repeat(WHOLE_WRITE_BYTES)}"}]}`

describe("a line is read only as the process's own code sealed it", () => {
  it('a short line carries the key, a long one an HMAC; each gives back its text', () => {
    const short = sealLine(KEY, SHORT)
    expect(short).toBe(`!${KEY}${SHORT}`)
    expect(unsealedLine(KEY, short)).toBe(SHORT)
    const long = sealLine(KEY, LONG)
    expect(long.length).toBe(SEAL_CHARS + LONG.length)
    expect(unsealedLine(KEY, long)).toBe(LONG)
  })

  it('a line of characters of three bytes each is short only as its bytes say', () => {
    const text = `"${'中'.repeat(1400)}"`
    expect(sealLine(KEY, text).startsWith('!')).toBe(false)
    expect(unsealedLine(KEY, sealLine(KEY, text))).toBe(text)
  })

  it('is refused without a seal or under another key; a long one also cut short, or with a write spliced into it', () => {
    for (const text of [SHORT, LONG]) {
      expect(unsealedLine(KEY, text)).toBeUndefined()
      expect(unsealedLine('another-key', sealLine(KEY, text))).toBeUndefined()
    }
    const long = sealLine(KEY, LONG)
    expect(unsealedLine(KEY, long.slice(0, -1))).toBeUndefined()
    const at = SEAL_CHARS + 30
    expect(unsealedLine(KEY, `${long.slice(0, at)}"},{"type":"answer","callId":8${long.slice(at)}`)).toBeUndefined()
    expect(unsealedLine(KEY, '')).toBeUndefined()
  })

  it('a line in the short form that is too long to have been written whole is refused, though it carries the key', () => {
    expect(unsealedLine(KEY, `!${KEY}${LONG}`)).toBeUndefined()
  })
})
