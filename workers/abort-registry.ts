// Fires a running call's ctx.abortSignal when the front says its deadline passed or its
// caller left. The front cannot address one Piscina worker, so it broadcasts the call id.
import { BroadcastChannel } from 'node:worker_threads'
import type { AbortNotice } from '../src/protocol/worker-messages.js'

const running = new Map<number, AbortController>()

export function listenForAborts(channelName: string): void {
  const channel = new BroadcastChannel(channelName)
  channel.onmessage = (event) => abortCall((event as unknown as { data: AbortNotice }).data)
  channel.unref()
}

export function abortCall(notice: AbortNotice): void {
  running.get(notice.callId)?.abort(new Error(notice.reason === 'deadline' ? 'deadline exceeded' : 'caller went away'))
}

export function registerCall(callId: number): AbortSignal {
  const controller = new AbortController()
  running.set(callId, controller)
  return controller.signal
}

export function forgetCall(callId: number): void {
  running.delete(callId)
}
