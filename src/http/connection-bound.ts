// A server's bound on its open connections. Each is a descriptor of the front's, and pack code
// with network access can reach the service's ports: past the bound a new connection takes the
// place of the oldest one `evictable` allows, or, with none, is closed unanswered. Unbounded,
// connections held by a tool took the front to its descriptor limit, where every port went
// deaf (a red-team pass on the metrics port, stop 38).
import type { Server } from 'node:http'
import type { Socket } from 'node:net'

export function boundConnections(server: Server, max: number, evictable: (socket: Socket) => boolean): void {
  // Oldest first (a Set keeps the order of insertion).
  const open = new Set<Socket>()
  server.on('connection', (socket: Socket) => {
    if (open.size >= max) {
      const room = oldest(open, evictable)
      if (room === undefined) {
        socket.destroy()
        return
      }
      room.destroy()
      open.delete(room)
    }
    open.add(socket)
    socket.once('close', () => open.delete(socket))
  })
}

function oldest(open: Set<Socket>, evictable: (socket: Socket) => boolean): Socket | undefined {
  for (const socket of open) if (evictable(socket)) return socket
  return undefined
}
