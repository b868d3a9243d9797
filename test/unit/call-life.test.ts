// The front's owner of a call (src/pool/call-life.ts) against a fake group that answers, frees
// and is stopped in any order: fast-check drives it with commands (the worker answers, the
// worker frees the call, the deadline passes, the caller leaves, cpuMs is passed) and checks
// it against a model after every step. Whatever the order: one answer to the caller, and the
// one the model says; at most one stop, only before any answer; one release, only once the
// worker let go.
import fc from 'fast-check'
import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest'
import { followCall, step, type CallEnd, type LifeState } from '../../src/pool/call-life.js'
import type { RunningCall } from '../../src/pool/group.js'
import type { GroupAnswer, StopReason } from '../../src/protocol/call-answers.js'
import type { RunnableEntry } from '../../src/protocol/runnable-entry.js'
import { toolEntry } from '../helpers/entries.js'

const TIMEOUT_MS = 1_000
const CPU_MS = 50
const entry: RunnableEntry = toolEntry('t', '/', { modulePath: 't.js', posture: 'strict', cpuMs: CPU_MS })
const ok: GroupAnswer = { kind: 'result', result: { outcome: 'ok', body: '{"v":2,"kind":"result","output":1}' } }
const died: GroupAnswer = { kind: 'died', reason: 'crash', detail: 'code 1' }
const notStarted: GroupAnswer = { kind: 'not-started', why: 'its tmpDir could not be made: ENOENT' }

/** What the system under test did, as seen from outside it. */
type Real = {
  responses: CallEnd[]
  stops: StopReason[]
  releases: number
  workerAnswered: boolean
  workerFreed: boolean
  answerWorker(answer: GroupAnswer): void
  freeWorker(): void
  leave(): void
  busy: number | undefined
}

/** What should have happened: the first of the worker's answer or a limit answers; the worker's let-go releases. */
type Model = { state: LifeState; expected: string | undefined; stopped: StopReason | undefined }

const flush = async () => {
  for (let i = 0; i < 5; i++) await Promise.resolve()
}

function start(): Real {
  let resolveAnswer!: (a: GroupAnswer) => void
  let resolveFreed!: () => void
  let gone: (() => void) | undefined
  const real: Real = {
    responses: [],
    stops: [],
    releases: 0,
    workerAnswered: false,
    workerFreed: false,
    busy: undefined,
    answerWorker: (a) => {
      real.workerAnswered = true
      resolveAnswer(a)
    },
    freeWorker: () => {
      real.workerFreed = true
      resolveFreed()
    },
    leave: () => gone?.(),
  }
  const running: RunningCall = {
    answer: new Promise((r) => (resolveAnswer = r)),
    freed: new Promise((r) => (resolveFreed = r)),
    stop: (reason) => real.stops.push(reason),
    busyMs: () => real.busy,
  }
  void followCall(
    running,
    entry,
    {
      timeoutMs: TIMEOUT_MS,
      onCallerGone: (l) => {
        gone = l
        return () => {
          gone = undefined
        }
      },
    },
    () => real.releases++,
  ).then((a) => real.responses.push(a))
  return real
}

/** A call's end as the model states it: the answer's outcome, or 'not-started'. */
const outcomeOf = (end: CallEnd | undefined) => (end?.kind === 'answered' ? end.answer.outcome : end?.kind)

function check(model: Model, real: Real): void {
  expect(real.responses.length).toBe(model.expected === undefined ? 0 : 1)
  if (model.expected !== undefined) expect(outcomeOf(real.responses[0])).toBe(model.expected)
  expect(real.stops).toEqual(model.stopped === undefined ? [] : [model.stopped])
  expect(real.releases).toBe(model.state === 'ended' ? 1 : 0)
  if (real.releases > 0) expect(real.workerFreed).toBe(true)
}

/** A limit fires: answered with its code and the worker stopped, unless the call was answered already. */
function limit(model: Model, outcome: string, reason: StopReason): void {
  if (model.state !== 'running') return
  model.state = 'answered'
  model.expected = outcome
  model.stopped = reason
}

class WorkerAnswers implements fc.AsyncCommand<Model, Real> {
  constructor(readonly answer: GroupAnswer) {}
  check = (m: Readonly<Model>) => m.state !== 'ended'
  async run(m: Model, r: Real) {
    if (r.workerAnswered) return
    r.answerWorker(this.answer)
    await flush()
    if (m.state === 'running') {
      m.state = 'answered'
      m.expected = this.answer.kind === 'result' ? 'ok' : this.answer.kind === 'not-started' ? 'not-started' : 'handler-throw'
    }
    check(m, r)
  }
  toString = () => `worker answers ${this.answer.kind}`
}

class WorkerFrees implements fc.AsyncCommand<Model, Real> {
  check = (m: Readonly<Model>) => m.state !== 'ended'
  async run(m: Model, r: Real) {
    r.freeWorker()
    await flush()
    // A worker that let go without an answer (its process died): the caller hears why.
    if (m.state === 'running') m.expected = 'handler-throw'
    m.state = 'ended'
    check(m, r)
  }
  toString = () => 'worker frees the call'
}

/** A limit fires from outside the worker: the deadline, the caller leaving, cpuMs passed. */
class LimitFires implements fc.AsyncCommand<Model, Real> {
  constructor(
    readonly reason: StopReason,
    readonly outcome: string,
    readonly fire: (r: Real) => void,
  ) {}
  check = () => true
  async run(m: Model, r: Real) {
    this.fire(r)
    await flush()
    limit(m, this.outcome, this.reason)
    check(m, r)
  }
  toString = () => `${this.reason} fires`
}

const deadlinePasses = new LimitFires('deadline', 'deadline-exceeded', () => vi.advanceTimersByTime(TIMEOUT_MS))
const callerLeaves = new LimitFires('cancelled', 'cancelled', (r) => r.leave())
const cpuPassed = new LimitFires('cpu', 'deadline-exceeded', (r) => {
  r.busy = CPU_MS + 1
  vi.advanceTimersByTime(CPU_MS + 25)
})

describe("the front's owner of a call", () => {
  beforeEach(() => {
    vi.useFakeTimers()
  })
  afterEach(() => {
    vi.useRealTimers()
  })

  it('whatever the order of answers, frees, deadlines, callers leaving and cpuMs: one answer, at most one stop, one release once freed', async () => {
    const commands = fc.commands(
      [
        fc.constantFrom(ok, died, notStarted).map((a) => new WorkerAnswers(a)),
        fc.constant(new WorkerFrees()),
        fc.constant(deadlinePasses),
        fc.constant(callerLeaves),
        fc.constant(cpuPassed),
      ],
      { maxCommands: 8 },
    )
    await fc.assert(
      fc.asyncProperty(commands, async (cmds) => {
        const setup = () => ({ model: { state: 'running', expected: undefined, stopped: undefined } as Model, real: start() })
        await fc.asyncModelRun(setup, cmds)
      }),
      { numRuns: 300 },
    )
  })

  it('a call is always ended by its worker letting go: after any commands, freeing it answers it once and releases it once', async () => {
    await fc.assert(
      fc.asyncProperty(fc.array(fc.constantFrom('answer', 'deadline', 'leave'), { maxLength: 4 }), async (events) => {
        const real = start()
        for (const event of events) {
          if (event === 'answer' && !real.workerAnswered) real.answerWorker(ok)
          if (event === 'deadline') vi.advanceTimersByTime(TIMEOUT_MS)
          if (event === 'leave') real.leave()
          await flush()
        }
        real.freeWorker()
        await flush()
        expect(real.responses).toHaveLength(1)
        expect(real.releases).toBe(1)
        expect(real.stops.length).toBeLessThanOrEqual(1)
      }),
      { numRuns: 200 },
    )
  })
})

describe("the table of a call's life", () => {
  const end: CallEnd = { kind: 'answered', answer: { outcome: 'ok', body: 'a' } }
  const worker = { kind: 'worker-answered', end } as const
  const freed = { kind: 'worker-freed', why: () => end } as const
  const deadline = { kind: 'limit', reason: 'deadline', end } as const
  const respond = { kind: 'respond', end }
  const release = { kind: 'release' }

  it('a running call is answered by its worker, or by a limit that also stops the worker, or by its worker letting go, which releases it', () => {
    expect(step('running', worker)).toEqual({ state: 'answered', effects: [respond] })
    expect(step('running', deadline)).toEqual({ state: 'answered', effects: [respond, { kind: 'stop', reason: 'deadline' }] })
    expect(step('running', freed)).toEqual({ state: 'ended', effects: [respond, release] })
  })

  it('an answered call ignores later answers and limits, and is released when its worker lets go', () => {
    expect(step('answered', worker)).toEqual({ state: 'answered', effects: [] })
    expect(step('answered', deadline)).toEqual({ state: 'answered', effects: [] })
    expect(step('answered', freed)).toEqual({ state: 'ended', effects: [release] })
  })

  it('an ended call does nothing more, whatever comes', () => {
    for (const event of [worker, freed, deadline]) expect(step('ended', event)).toEqual({ state: 'ended', effects: [] })
  })
})
