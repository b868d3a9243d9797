// A pack-code process's channel to the host that started it (a warm group's pack process to the
// front, a strict call's process to its spawner), one JSON message a line: in on stdin, out on
// fd 3. The host's end (src/protocol/frame-channel.ts) reads fd 3 bounded, and ends a process
// that writes anything else there, since pack code can. Not Node's IPC channel: its parser in
// the host holds whatever it is given and throws at what is not JSON. And a process without
// --allow-net may not open a socket on a descriptor (Node >= 25): stdin is Node's own stream
// (a read of it does not hold up the process's exit as a blocked read in the thread pool
// would), and fd 3 is written with writeSync. The host's lines are taken whole: it is the host.
import { writeSync } from 'node:fs'

const OUT = 3

export type FdChannel = {
  send(message: unknown): void
  /** A message already serialized, without its newline. */
  sendLine(line: string): void
}

/** Reads messages until the other end closes (then `onClosed`). */
export function openFdChannel(onMessage: (message: unknown) => void, onClosed: () => void): FdChannel {
  let partial = ''
  process.stdin.setEncoding('utf8')
  process.stdin.on('data', (chunk: string) => {
    let start = 0
    for (let newline = chunk.indexOf('\n'); newline !== -1; newline = chunk.indexOf('\n', start)) {
      const line = partial + chunk.slice(start, newline)
      partial = ''
      start = newline + 1
      onMessage(JSON.parse(line))
    }
    partial += chunk.slice(start)
  })
  process.stdin.once('end', onClosed)
  process.stdin.once('close', onClosed)
  const sendLine = (line: string) => {
    const bytes = Buffer.from(`${line}\n`)
    for (let sent = 0; sent < bytes.length; ) sent += writeSync(OUT, bytes, sent)
  }
  return { send: (message) => sendLine(JSON.stringify(message)), sendLine }
}
