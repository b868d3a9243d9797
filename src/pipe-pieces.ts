// Where to cut what goes to a pipe that other processes write too (the service's stderr: the
// front's log lines, and pack output passed on by the front and the spawner). The kernel never
// interleaves a write of at most PIPE_BUF bytes with another's; a longer one it may split when
// the pipe is full, and another process's line lands inside it (stop 29: pack output spliced
// into call lines while the log's reader lagged). So whole lines go in pieces of at most this.

/** PIPE_BUF on Linux. */
export const PIPE_BUF = 4096

const NEWLINE = 0x0a

/**
 * The end of the next piece of `bytes` from `start`: after the last newline within PIPE_BUF
 * bytes, or the end of `bytes` if that comes first; `start` itself when the line at `start` is
 * longer than a piece (the caller writes it whole, or cuts it).
 */
export function pieceEnd(bytes: Uint8Array, start: number): number {
  if (bytes.length - start <= PIPE_BUF) return bytes.length
  return start + bytes.subarray(start, start + PIPE_BUF).lastIndexOf(NEWLINE) + 1
}
