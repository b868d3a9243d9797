// workers/stay-awake.ts: a thread kept turning for its next message must stop as soon as it is
// told, and say so (a thread left turning takes a core), and must not block its event loop
// meanwhile: the message it stays awake for has to get through.
import { MessageChannel } from 'node:worker_threads'
import { describe, expect, it } from 'vitest'
import { stayAwake } from '../../workers/stay-awake.js'

describe('a thread kept awake', () => {
  it('turns until done() says so, then stops and says it stopped, once', async () => {
    let turns = 0
    let stops = 0
    await new Promise<void>((resolve) => {
      stayAwake(
        () => ++turns >= 5,
        () => {
          stops++
          resolve()
        },
      )
    })
    await new Promise((resolve) => setTimeout(resolve, 20))
    expect(turns).toBe(5)
    expect(stops).toBe(1)
  })

  it('keeps its event loop running: a timer and a message due meanwhile are handled while it turns', async () => {
    let timerRan = false
    let messageCame = false
    setTimeout(() => (timerRan = true), 2)
    const { port1, port2 } = new MessageChannel()
    port1.once('message', () => {
      messageCame = true
      port1.close()
    })
    port2.postMessage('next call')
    const started = performance.now()
    // The cap only ends a broken run; 5 s so that a stalled thread still gets both through first.
    await new Promise<void>((resolve) => stayAwake(() => (timerRan && messageCame) || performance.now() - started > 5_000, resolve))
    expect(timerRan).toBe(true)
    expect(messageCame).toBe(true)
  })
})
