// Connections that have carried the service token: the runtime's. The connection bound
// (front-server.ts) makes room for a new connection by closing the oldest one that has not,
// so that no one without the token (pack code with network access, which can reach the
// service's own port: a red-team pass held every one of 1,024 connections, stop 36) crowds
// the runtime out. One owner: app.ts marks, front-server.ts reads.
import type { Socket } from 'node:net'

const proven = new WeakSet<Socket>()

export function markProven(socket: Socket): void {
  proven.add(socket)
}

export function isProven(socket: Socket): boolean {
  return proven.has(socket)
}
