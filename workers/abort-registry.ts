// Fires a running call's ctx.abortSignal when the front says its deadline passed or its caller
// left. The pack process cannot address one Piscina worker, so it broadcasts the call id with
// the call's secret nonce: pack code that posts on the channel fires nothing.
import { BroadcastChannel } from 'node:worker_threads'
import type { AbortNotice } from '../src/protocol/worker-messages.js'

const running = new Map<number, { controller: AbortController; nonce: string | undefined }>()

export function listenForAborts(channelName: string): void {
  const channel = new BroadcastChannel(channelName)
  channel.onmessage = (event) => abortCall((event as unknown as { data: AbortNotice }).data)
  channel.unref()
}

/** Acts on a notice that carries the call's nonce (a warm worker's; a strict process has none). */
export function abortCall(notice: AbortNotice): void {
  const call = running.get(notice.callId)
  if (call === undefined || call.nonce !== notice.nonce) return
  call.controller.abort(new Error(notice.reason === 'deadline' ? 'deadline exceeded' : 'caller went away'))
}

export function registerCall(callId: number, nonce: string | undefined): AbortSignal {
  const controller = new AbortController()
  running.set(callId, { controller, nonce })
  return controller.signal
}

export function forgetCall(callId: number): void {
  running.delete(callId)
}
