// The host's end of the channel from a process that runs pack code (src/protocol/frame-channel.ts):
// one JSON message a line, whatever the chunks; a line that is not JSON, or one past the limits
// (characters, values outside strings), breaks it.
import { PassThrough } from 'node:stream'
import { describe, expect, it } from 'vitest'
import { fromBase64, openFrames, toBase64 } from '../../src/protocol/frame-channel.js'
import { nestedPast, valuesIn, valuesPast } from '../../src/protocol/json-values.js'

function channel(): { pipe: PassThrough; got: unknown[]; broken: number[] } {
  const pipe = new PassThrough()
  const got: unknown[] = []
  const broken: number[] = []
  openFrames(
    pipe,
    new PassThrough(),
    (m) => got.push(m),
    () => undefined,
    () => broken.push(1),
  )
  return { pipe, got, broken }
}

const tick = () => new Promise((r) => setImmediate(r))

describe('messages arrive whole, whatever the chunks', () => {
  it('several lines in one chunk, a line split over chunks, a split multi-byte character', async () => {
    const { pipe, got, broken } = channel()
    pipe.write('{"a":1}\n{"b":')
    pipe.write('2}\n{"c":"é')
    pipe.write(Buffer.from('🙂"}\n', 'utf8').subarray(0, 2))
    pipe.write(Buffer.from('🙂"}\n', 'utf8').subarray(2))
    await tick()
    expect(got).toEqual([{ a: 1 }, { b: 2 }, { c: 'é🙂' }])
    expect(broken).toEqual([])
  })
})

describe('a channel that says what the host never sends is broken', () => {
  it('a line that is not JSON breaks it, and nothing after it is taken', async () => {
    const { pipe, got, broken } = channel()
    pipe.write('{"a":1}\nnot json\n{"b":2}\n')
    await tick()
    expect(got).toEqual([{ a: 1 }])
    expect(broken).toEqual([1])
  })

  it('a line past the limit breaks it before it is held whole', async () => {
    const { pipe, got, broken } = channel()
    const piece = 'x'.repeat(1024 * 1024)
    for (let i = 0; i < 17; i++) pipe.write(piece)
    await tick()
    expect(got).toEqual([])
    expect(broken).toEqual([1])
  })
})

describe('a line of more values outside strings than any message of ours is broken before it is parsed', () => {
  it('a line of a hundred thousand empty objects breaks it', async () => {
    const { pipe, got, broken } = channel()
    pipe.write(`{"type":"junk","a":[${'{},'.repeat(99_999)}{}]}\n`)
    await tick()
    expect(got).toEqual([])
    expect(broken).toEqual([1])
  })

  it('a line of one object with a hundred thousand keys breaks it', async () => {
    const { pipe, got, broken } = channel()
    pipe.write(`{"type":"junk","a":{${Array.from({ length: 100_000 }, (_, i) => `"${i.toString(36)}":0`).join(',')}}}\n`)
    await tick()
    expect(got).toEqual([])
    expect(broken).toEqual([1])
  })

  it('braces inside strings are text, not objects: a long answer whose JSON is a string passes', async () => {
    const { pipe, got, broken } = channel()
    const body = JSON.stringify(Array.from({ length: 100_000 }, () => ({})))
    pipe.write(`${JSON.stringify({ type: 'result', result: { outcome: 'ok', body } })}\n`)
    await tick()
    expect(got).toEqual([{ type: 'result', result: { outcome: 'ok', body } }])
    expect(broken).toEqual([])
  })
})

describe('valuesPast counts objects, arrays, members and elements outside strings only', () => {
  it('counts up to its bound, skipping strings with escaped quotes', () => {
    expect(valuesPast('[{},{}]', 4)).toBe(false) // [ { , {
    expect(valuesPast('[{},{},[]]', 5)).toBe(true)
    expect(valuesPast('{"a":1,"b":2}', 4)).toBe(false) // { : , :
    expect(valuesPast('{"a":1,"b":2,"c":3}', 5)).toBe(true)
    expect(valuesPast('{"a":"{[,:{[\\"{[,:"}', 2)).toBe(false)
    // An escaped backslash ends with the string's own quote: what follows is counted again.
    expect(valuesPast(String.raw`{"a":"\\", "b":[[]]}`, 4)).toBe(true)
  })
})

describe('valuesIn says how many values a line holds outside its strings, for what parsing it costs', () => {
  it('counts each object, array, member and element, and stops one past its bound', () => {
    expect(valuesIn('{"type":"result","result":{"outcome":"ok","body":"{[,:]}"}}', 100)).toBe(8) // { : , : { : , :
    expect(valuesIn(`{${'"k":0,'.repeat(999)}"k":0}`, 100_000)).toBe(2_000)
    expect(valuesIn('[[[[[[', 3)).toBe(4)
  })
})

describe('nestedPast finds what recursion would not take, without recursing', () => {
  it('names the JSON pointer of the first value past the bound, escaping ~ and /', () => {
    expect(nestedPast({ a: { b: [1, { c: 2 }] } }, 8)).toBeUndefined()
    expect(nestedPast({ 'x/y': { '~': [[1]] } }, 3)).toBe('/x~1y/~0/0')
    let deep: unknown = 1
    for (let i = 0; i < 100_000; i++) deep = [deep]
    expect(nestedPast(deep, 256)).toBe(`/${Array(256).fill('0').join('/')}`)
  })
})

describe('a message is passed on as the text it came as', () => {
  it('onMessage gets the line’s text beside the message, and sendText writes a line as it is', async () => {
    const pipe = new PassThrough()
    const out = new PassThrough()
    const texts: string[] = []
    const frames = openFrames(
      pipe,
      out,
      (_m, _length, text) => texts.push(text),
      () => undefined,
      () => undefined,
    )
    pipe.write('{"a":1}\n{"b": [2]}\n')
    await tick()
    expect(texts).toEqual(['{"a":1}', '{"b": [2]}'])
    expect(frames.sendText('{"c":3}')).toBe(8)
    expect(out.read()?.toString()).toBe('{"c":3}\n')
  })
})

describe('bytes cross as base64', () => {
  it('comes back as the same bytes', () => {
    const bytes = new Uint8Array([0, 1, 254, 255]).buffer
    expect(new Uint8Array(fromBase64(toBase64(bytes)))).toEqual(new Uint8Array([0, 1, 254, 255]))
  })
})
