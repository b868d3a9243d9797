// The mailbox's promises, on one thread playing both sides: calls come out in the order they
// went in and intact; a call taken back never comes out; a worker that found it empty has
// closed it, so nothing put after that is stranded; it never holds more than it can.
import { describe, expect, it } from 'vitest'
import { createMailbox, fitsMailbox, MAILBOX_CALLS, openMailbox, putNext, revokeNext, runningCall, takeNext, type NextCall } from '../../src/protocol/mailbox.js'

const call = (callId: number, body = `{"i":${callId}}`): NextCall => ({ callId, key: 'tool:echo@1.0.0', body, ids: { runId: `r${callId}` } })

describe('a mailbox', () => {
  it('gives calls to the worker in the order the front put them, intact, and names the one it runs', () => {
    const box = createMailbox()
    openMailbox(box, 1)
    expect(runningCall(box)).toBe(1)
    const unicode = call(3, JSON.stringify({ text: 'é✓🚀'.repeat(300) }))
    expect(putNext(box, call(2))).toBe(true)
    expect(putNext(box, unicode)).toBe(true)
    expect(takeNext(box)).toEqual({ ...call(2), cpuSlot: undefined })
    expect(runningCall(box)).toBe(2)
    expect(takeNext(box)).toEqual({ ...unicode, cpuSlot: undefined })
    expect(runningCall(box)).toBe(3)
  })

  it('never gives out a call the front took back, and says whether it could', () => {
    const box = createMailbox()
    openMailbox(box, 1)
    for (const id of [2, 3, 4]) putNext(box, call(id))
    expect(revokeNext(box, 3)).toBe(true)
    expect(revokeNext(box, 3)).toBe(false)
    expect(takeNext(box)?.callId).toBe(2)
    expect(revokeNext(box, 2)).toBe(false) // taken: the worker runs it
    expect(takeNext(box)?.callId).toBe(4)
    expect(takeNext(box)).toBeUndefined()
  })

  it('is closed by the worker that found it empty: the front cannot strand a call in it', () => {
    const box = createMailbox()
    openMailbox(box, 1)
    expect(takeNext(box)).toBeUndefined()
    expect(putNext(box, call(2))).toBe(false)
    expect(revokeNext(box, 2)).toBe(false)
  })

  it(`holds at most ${MAILBOX_CALLS} calls, and only bodies that fit`, () => {
    const box = createMailbox()
    openMailbox(box, 1)
    for (let i = 0; i < MAILBOX_CALLS; i++) expect(putNext(box, call(i + 2))).toBe(true)
    expect(putNext(box, call(99))).toBe(false)
    expect(fitsMailbox('x'.repeat(100))).toBe(true)
    expect(fitsMailbox('x'.repeat(1024 * 1024))).toBe(false)
  })
})
