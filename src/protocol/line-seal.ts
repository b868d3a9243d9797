// What a warm pack process's own code writes on its channel to the front, sealed: each line
// begins with an HMAC of the rest under a key the front gave the process before any pack code
// loaded. Every thread of the process can write on that channel (fd 3): a worker's own lines
// and a worker's write spliced into a line of the process's own (a pipe takes a long line in
// pieces, and a nested Worker's small write landed between two; a red-team pass, stop 36)
// both fail the seal, and the front then ends the process as it does for any line it cannot read.
import { createHmac, timingSafeEqual } from 'node:crypto'

/** The seal's length: an HMAC-SHA256 in base64url. */
export const SEAL_CHARS = 43

function seal(key: string, text: string): string {
  return createHmac('sha256', key).update(text).digest('base64url')
}

export function sealLine(key: string, text: string): string {
  return seal(key, text) + text
}

/** The line without its seal, or undefined if the seal is not this key's for it. */
export function unsealedLine(key: string, line: string): string | undefined {
  if (line.length < SEAL_CHARS) return undefined
  const text = line.slice(SEAL_CHARS)
  const given = Buffer.from(line.slice(0, SEAL_CHARS))
  const expected = Buffer.from(seal(key, text))
  return given.length === expected.length && timingSafeEqual(given, expected) ? text : undefined
}
