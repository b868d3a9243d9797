// The spawner: a small process of the front's that starts strict calls' processes for it.
// Starting a process copies the starter's page tables, so its cost grows with the starter's
// memory: a front holding its pools and connections pays several ms of its event loop for
// every start (bench/spawn-cost.ts), this process a fraction of that. It runs no pack code,
// holds no token and no socket of the front's; it relays each process's IPC messages to the
// front tagged with the id the front gave that process, never with anything the process says.
import { spawn, type ChildProcess } from 'node:child_process'
import type { FromSpawner, ToSpawner } from './spawner-messages.js'

const children = new Map<number, ChildProcess>()
const toFront = (message: FromSpawner): void => {
  if (process.connected) process.send!(message)
}

process.on('message', (message: ToSpawner) => {
  if (message.t === 'start') {
    const { id } = message
    const child = spawn(message.command, message.args, { env: message.env, stdio: ['ignore', 'inherit', 'inherit', 'ipc'], serialization: 'advanced' })
    children.set(id, child)
    child.on('message', (msg) => toFront({ t: 'message', id, msg }))
    let ended = false
    const end = (code: number | null, signal: NodeJS.Signals | null) => {
      if (ended) return
      ended = true
      children.delete(id)
      toFront({ t: 'exit', id, code, signal })
    }
    // 'close', not 'exit': the messages it sent before it ended are relayed first.
    child.once('close', end)
    // 'error' is also a failed kill or send: only a process that never started has ended.
    child.on('error', () => {
      if (child.pid === undefined) end(null, null)
    })
    toFront({ t: 'started', id, pid: child.pid })
    return
  }
  const child = children.get(message.id)
  if (child === undefined) return
  if (message.t === 'kill') child.kill('SIGKILL')
  else if (child.connected) child.send(message.msg as never, (err) => void err)
})

// Without the front there is nobody to serve: end every process started for it, then itself.
process.on('disconnect', () => {
  for (const child of children.values()) child.kill('SIGKILL')
  process.exit(0)
})
