// Fires a running call's ctx.abortSignal when the front says its deadline passed or its caller
// left, and keeps a call still waiting its turn on this worker from running at all when the
// pack process withdraws it. The pack process cannot address one Piscina worker, so it
// broadcasts the call id with the call's secret nonce: pack code that posts on the channel
// fires nothing.
import { BroadcastChannel } from 'node:worker_threads'
import type { AbortNotice } from '../src/protocol/worker-messages.js'

const running = new Map<number, { controller: AbortController; nonce: string | undefined }>()
/** A task of a call that waits for its turn on this worker, and whether it was withdrawn. */
export type Waiting = { nonce: string | undefined; withdrawn: boolean; onWithdrawn(): void }
/** The latest task of each call this worker holds that has not had its turn yet. */
const waiting = new Map<number, Waiting>()

export function listenForAborts(channelName: string): void {
  const channel = new BroadcastChannel(channelName)
  channel.onmessage = (event) => abortCall((event as unknown as { data: AbortNotice }).data)
  channel.unref()
}

/** Acts on a notice that carries the call's nonce (a warm worker's; a strict process has none). */
export function abortCall(notice: AbortNotice): void {
  const queued = waiting.get(notice.callId)
  if (queued !== undefined && queued.nonce === notice.nonce) {
    if (!queued.withdrawn) queued.onWithdrawn()
    queued.withdrawn = true
    return
  }
  const call = running.get(notice.callId)
  if (call === undefined || call.nonce !== notice.nonce || notice.reason === 'withdrawn') return
  call.controller.abort(new Error(notice.reason === 'deadline' ? 'deadline exceeded' : 'caller went away'))
}

/**
 * The call reached this worker and waits for its turn; `onWithdrawn` runs if it is withdrawn
 * before it. The task keeps what this returns: a withdrawn call can reach the same worker again
 * before its first task's turn has come, and each task must answer for itself.
 */
export function callWaits(callId: number, nonce: string | undefined, onWithdrawn: () => void): Waiting {
  const mine: Waiting = { nonce, withdrawn: false, onWithdrawn }
  waiting.set(callId, mine)
  return mine
}

/** Its turn came: true when this task was withdrawn meanwhile (it must not run). */
export function turnCame(callId: number, mine: Waiting): boolean {
  if (waiting.get(callId) === mine) waiting.delete(callId)
  return mine.withdrawn
}

export function registerCall(callId: number, nonce: string | undefined): AbortSignal {
  const controller = new AbortController()
  running.set(callId, { controller, nonce })
  return controller.signal
}

export function forgetCall(callId: number): void {
  running.delete(callId)
}
