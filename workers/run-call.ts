// Runs one call in a worker: validate, run the handler or check, validate what it returned,
// and answer with the serialized response message. Every outcome is a typed result.
import { MAX_ANSWER_CHARS } from '../src/protocol/channel-limits.js'
import { toIssues } from '../src/protocol/issues.js'
import { errorMessage, handlerThrow, memoryExceeded, throwText, validationText } from '../src/protocol/messages.js'
import type { CheckInvoke, ResponseMessage, Target, ToolInvoke } from '../src/protocol/wire.js'
import type { CallTask } from '../src/protocol/worker-messages.js'
import type { CallResult } from '../src/protocol/call-answers.js'
import { forgetCall, registerCall } from './abort-registry.js'
import { buildToolContext, isPauseRequest } from './context.js'
import { buildFiles } from './files.js'
import { setCurrentTarget } from './guards.js'
import type { LoadedEntry } from './load-entries.js'
import { overLimit, watchMemory } from './memory-watch.js'
import { runOwned } from './stray-errors.js'

const MAX_PAUSE_MS = 2073600000

export async function runCall(loaded: Map<string, LoadedEntry>, task: CallTask): Promise<CallResult> {
  const item = loaded.get(task.key)
  const message = JSON.parse(task.body) as ToolInvoke | CheckInvoke
  if (item === undefined) {
    const about: Target = message.kind === 'invoke' ? { target: 'tool', id: message.tool.id } : { target: 'check', id: message.check.id }
    return answer(errorMessage(about.target === 'tool' ? 'tool-not-in-pack' : 'check-not-in-pack', `${about.id} is not loaded in this worker`, about))
  }
  return fitForTheChannel(await runLoaded(item, message, task), { target: item.entry.target, id: item.entry.id })
}

async function runLoaded(item: LoadedEntry, message: ToolInvoke | CheckInvoke, task: CallTask): Promise<CallResult> {
  const { entry } = item
  setCurrentTarget(entry.id)
  const signal = registerCall(task.callId, task.nonce)
  const memMB = entry.memMB
  let stopWatch: (() => void) | undefined
  try {
    // Owned by the call: a throw from code it started is its own, not a stray (stray-errors.ts).
    const running = runOwned(task.callId, () => (message.kind === 'invoke' ? runTool(item, message, task, signal) : runCheck(item, message, signal)))
    if (memMB === undefined) return await running
    // Answered by the handler, or at once when the memory watch trips (undefined).
    const result = await new Promise<CallResult | undefined>((resolve, reject) => {
      stopWatch = watchMemory(memMB, () => resolve(undefined))
      running.then(resolve, reject)
    })
    if (result === undefined || overLimit(memMB)) return memoryExceededResult(item)
    return result
  } finally {
    stopWatch?.()
    forgetCall(task.callId)
  }
}

/**
 * An answer too long for the channel to the host (channel-limits.ts) fails its own call, saying
 * so: sent, it would end the process and every call in it. Each character of JSON text crosses
 * as at most two (a quote or a backslash, escaped), so most answers need no second look.
 */
function fitForTheChannel(result: CallResult, about: Target): CallResult {
  if (result.body.length <= MAX_ANSWER_CHARS / 2) return result
  const crossing = JSON.stringify(result.body).length
  if (crossing <= MAX_ANSWER_CHARS) return result
  const mib = (chars: number) => (chars / (1024 * 1024)).toFixed(1)
  const cause = {
    name: 'AnswerTooLarge',
    message: `its answer is ${mib(crossing)} MiB as it crosses to the host, over the ${mib(MAX_ANSWER_CHARS)} MiB an answer may be (quotes and backslashes in its JSON count twice)`,
  }
  return answer(errorMessage('handler-throw', throwText(about, cause), about, { cause }), result.retire)
}

/**
 * An allocation the runtime refused under memMB: in a strict call's process the data limit
 * (strict-flags.ts) makes a large Buffer or SharedArrayBuffer fail with a RangeError.
 */
function hitMemoryLimit(item: LoadedEntry, thrown: unknown): boolean {
  return item.entry.memMB !== undefined && thrown instanceof RangeError && /allocation failed/i.test(thrown.message)
}

function memoryExceededResult(item: LoadedEntry): CallResult {
  const about: Target = { target: item.entry.target, id: item.entry.id }
  return { ...answer(memoryExceeded(about, item.entry.memMB as number)), retire: 'memory' }
}

function answer(message: ResponseMessage, retire?: CallResult['retire']): CallResult {
  const outcome = message.kind === 'error' ? message.code : 'ok'
  return retire !== undefined ? { outcome, body: JSON.stringify(message), retire } : { outcome, body: JSON.stringify(message) }
}

/** A context-isolated worker is replaced after any call that failed inside its handler. */
function retireAfterFailure(item: LoadedEntry): CallResult['retire'] {
  return item.entry.posture === 'context-isolated' ? 'failed' : undefined
}

async function runTool(item: LoadedEntry, message: ToolInvoke, task: CallTask, signal: AbortSignal): Promise<CallResult> {
  const { entry } = item
  const about: Target = { target: 'tool', id: entry.id }
  const input = message.input
  if (item.validateInput !== undefined && !item.validateInput(input)) {
    const issues = toIssues(item.validateInput.errors)
    return answer(errorMessage('input-validation-failed', validationText(`Input for tool "${entry.id}"`, issues), about, { issues }))
  }
  const ctx = buildToolContext(entry, message.ctx, signal, task, buildFiles(task, signal))
  let value: unknown
  try {
    value = await item.handler!(input, ctx)
  } catch (thrown) {
    if (hitMemoryLimit(item, thrown)) return memoryExceededResult(item)
    return answer(fromThrow(about, thrown, message.ctx.connections), retireAfterFailure(item))
  }
  if (isPauseRequest(value)) return answer(pauseAnswer(item, message, value))
  if (value === undefined) {
    return answer(errorMessage('output-validation-failed', `Handler for tool "${entry.id}" returned undefined, not an output`, about))
  }
  if (item.validateOutput !== undefined && !item.validateOutput(value)) {
    const issues = toIssues(item.validateOutput.errors)
    return answer(errorMessage('output-validation-failed', validationText(`Output of tool "${entry.id}"`, issues), about, { issues }))
  }
  try {
    return { outcome: 'ok', body: JSON.stringify({ v: 2, kind: 'result', output: value }) }
  } catch (err) {
    const why = (err as Error).message
    return answer(errorMessage('output-validation-failed', `Output of tool "${entry.id}" is not JSON: ${why}`, about))
  }
}

function fromThrow(about: Target, thrown: unknown, connections: Record<string, unknown> | undefined): ResponseMessage {
  const t = thrown as { code?: unknown; connection?: unknown } | null
  if (
    typeof t === 'object' &&
    t !== null &&
    t.code === 'connection-rejected' &&
    typeof t.connection === 'string' &&
    connections !== undefined &&
    Object.hasOwn(connections, t.connection)
  ) {
    return errorMessage('connection-rejected', `Tool "${about.id}" was refused by connection "${t.connection}"`, about, {
      connection: t.connection,
    })
  }
  return handlerThrow(about, thrown)
}

function pauseAnswer(item: LoadedEntry, message: ToolInvoke, request: { timeoutMs?: unknown; name?: unknown }): ResponseMessage {
  const about: Target = { target: 'tool', id: item.entry.id }
  if (!item.entry.pauses) {
    return errorMessage('pause-not-available', `Tool "${item.entry.id}" tried to pause, but its index entry does not say pauses: true`, about)
  }
  if (message.ctx.waitToken === undefined) {
    return errorMessage('pause-not-available', `Tool "${item.entry.id}" tried to pause, but the call carried no waitToken`, about)
  }
  const out: { v: 2; kind: 'pause'; timeoutMs?: number; name?: string } = { v: 2, kind: 'pause' }
  const { timeoutMs, name } = request
  if (timeoutMs !== undefined) {
    if (typeof timeoutMs !== 'number' || !Number.isInteger(timeoutMs) || timeoutMs < 1 || timeoutMs > MAX_PAUSE_MS) {
      return errorMessage(
        'output-validation-failed',
        `Tool "${item.entry.id}" paused with timeoutMs ${JSON.stringify(timeoutMs)}: it must be an integer from 1 to ${MAX_PAUSE_MS} (24 days)`,
        about,
      )
    }
    out.timeoutMs = timeoutMs
  }
  if (name !== undefined) {
    if (typeof name !== 'string') {
      return errorMessage('output-validation-failed', `Tool "${item.entry.id}" paused with a name that is not a string`, about)
    }
    out.name = name
  }
  return out
}

async function runCheck(item: LoadedEntry, message: CheckInvoke, signal: AbortSignal): Promise<CallResult> {
  const { entry } = item
  const about: Target = { target: 'check', id: entry.id }
  if (item.validateConfig !== undefined && !item.validateConfig(message.config)) {
    const issues = toIssues(item.validateConfig.errors)
    return answer(errorMessage('input-validation-failed', validationText(`Check "${entry.id}" config`, issues), about, { issues }))
  }
  let verdict: unknown
  try {
    verdict = await item.check!(message.config, message.trace, { abortSignal: signal })
  } catch (thrown) {
    if (hitMemoryLimit(item, thrown)) return memoryExceededResult(item)
    return answer(handlerThrow(about, thrown), retireAfterFailure(item))
  }
  if (typeof verdict === 'boolean') return answer({ v: 2, kind: 'check-result', result: { passed: verdict } })
  if (typeof verdict !== 'object' || verdict === null || Array.isArray(verdict) || typeof (verdict as { passed?: unknown }).passed !== 'boolean') {
    const got = verdict === null ? 'null' : Array.isArray(verdict) ? 'an array' : typeof verdict
    return answer(errorMessage('output-validation-failed', `Check "${entry.id}" returned ${got}, not an object with a boolean passed`, about))
  }
  try {
    return { outcome: 'ok', body: JSON.stringify({ v: 2, kind: 'check-result', result: verdict }) }
  } catch (err) {
    return answer(errorMessage('output-validation-failed', `Check "${entry.id}" returned a verdict that is not JSON: ${(err as Error).message}`, about))
  }
}
