// What a warm pack process's own code writes on its channel to the front, sealed with a key the
// front gave it before any pack code loaded. Every thread of the process can write on that
// channel (fd 3): a worker's own lines, and a worker's write spliced into a long line of the
// process's own (the kernel takes a long write in pieces, and a nested Worker's small write
// landed between two; a red-team pass, stop 36), fail the seal, and the front then ends the
// process as it does for any line it cannot read.
//   - A line short enough to be written in one piece (WHOLE_WRITE_BYTES, newline included)
//     begins with "!" and the key itself: with the socket's send buffer as the process got it,
//     nothing can land inside it, and pack code never saw the key. (Native code that shrinks
//     the buffer could split it, but native code in the process can read the key anyway.)
//   - A longer one begins with an HMAC-SHA256 of the rest under the key: each seal costs a few
//     µs (bench/PROFILE.md), which the warm path's short lines are spared.
import { createHmac, timingSafeEqual } from 'node:crypto'

/** A longer line's seal: an HMAC-SHA256 in base64url. */
export const SEAL_CHARS = 43

/** At most this many bytes go to a socket in one write, whole (a unix stream socket's one buffer, a pipe's PIPE_BUF). */
export const WHOLE_WRITE_BYTES = 4096

const PLAIN = '!'

function seal(key: string, text: string): string {
  return createHmac('sha256', key).update(text).digest('base64url')
}

/**
 * Whether the line, with its newline, fits one write. Its bytes are counted only where its
 * characters leave it in doubt: never for a long line (an answer of up to 16 MiB), which would
 * be read through once more for nothing.
 */
function writtenWhole(line: string): boolean {
  if (line.length + 1 > WHOLE_WRITE_BYTES) return false
  return line.length * 3 + 1 <= WHOLE_WRITE_BYTES || Buffer.byteLength(line) + 1 <= WHOLE_WRITE_BYTES
}

export function sealLine(key: string, text: string): string {
  const plain = `${PLAIN}${key}${text}`
  return writtenWhole(plain) ? plain : seal(key, text) + text
}

/** The line without its seal, or undefined if the seal is not this key's for it (or a plain one on a line too long to be written whole). */
export function unsealedLine(key: string, line: string): string | undefined {
  if (line.startsWith(PLAIN)) return writtenWhole(line) && line.startsWith(key, PLAIN.length) ? line.slice(PLAIN.length + key.length) : undefined
  if (line.length < SEAL_CHARS) return undefined
  const text = line.slice(SEAL_CHARS)
  const given = Buffer.from(line.slice(0, SEAL_CHARS))
  const expected = Buffer.from(seal(key, text))
  return given.length === expected.length && timingSafeEqual(given, expected) ? text : undefined
}
