// A strict call's process's channel to its spawner, one JSON message a line: in on stdin, out
// on fd 3 (src/protocol/frame-channel.ts reads that end, bounded, and kills a process that
// writes anything else). Node's IPC channel would leave the spawner to trust what pack code
// writes, and a process without --allow-net may not open a socket on a descriptor (Node >= 25);
// stdin is Node's own stream, and a read of it does not hold up the process's exit as a
// blocked read in the thread pool would.
import { writeSync } from 'node:fs'

const OUT = 3

/** Reads messages until the other end closes (then `onClosed`); answers the function that sends one. */
export function openFdChannel(onMessage: (message: unknown) => void, onClosed: () => void): (message: unknown) => void {
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
  return (message) => {
    const bytes = Buffer.from(`${JSON.stringify(message)}\n`)
    for (let sent = 0; sent < bytes.length; ) sent += writeSync(OUT, bytes, sent)
  }
}
