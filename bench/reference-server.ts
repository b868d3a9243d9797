// The in-process reference the benchmark measures the host against: plain node:http, the
// host's own token guard, body reader, envelope parser, entry lookup, module loader and Ajv,
// and the handler called in this thread. No isolation, no per-call log: the ceiling for any
// pack service on this machine. Never a way to serve packs: it exists only to be measured.
import { createServer, type IncomingMessage, type ServerResponse } from 'node:http'
import type { AddressInfo } from 'node:net'
import { toIssues } from '../src/ajv.js'
import { tokenGuard } from '../src/http/access-checks.js'
import { BODY_LIMIT, readBody } from '../src/http/read-body.js'
import { loadPackIndex } from '../src/pack-index.js'
import { errorMessage, handlerThrow, validationText } from '../src/protocol/messages.js'
import { parseRequest } from '../src/protocol/parse.js'
import type { CheckInvoke, ResponseMessage, Target, ToolInvoke } from '../src/protocol/wire.js'
import type { Pool } from '../src/pool/pool.js'
import { createServing, resolveEntry } from '../src/serving.js'
import { loadEntries, type LoadedEntry } from '../workers/load-entries.js'

function argument(name: string): string | undefined {
  const i = process.argv.indexOf(name)
  return i === -1 ? undefined : process.argv[i + 1]
}

function fail(message: string): never {
  process.stderr.write(`${JSON.stringify({ kind: 'boot-failed', problems: [message] })}\n`)
  process.exit(1)
}

const indexPath = argument('--index') ?? fail('--index is required')
const host = argument('--host') ?? '127.0.0.1'
const token = process.env.KINDGI_PACK_SERVICE_TOKEN ?? fail('KINDGI_PACK_SERVICE_TOKEN is required')
const port = Number(process.env.PORT ?? '0')

const read = loadPackIndex(indexPath, indexPath.replace(/[^/]*$/, ''), 'none')
if (read.kind === 'error' || read.problems.length > 0) fail(read.problems.join('; '))
const pack = read.pack
// resolveEntry reads only the entry maps; the reference has no pool.
const serving = createServing(pack, undefined as unknown as Pool, [])

// The workers' own loader: the same module shapes and the same Ajv, here in this thread.
const { entries: loaded, problems } = await loadEntries(pack.entries)
if (problems.length > 0) fail(problems.join('; '))

const checkToken = tokenGuard(token)
const artifactVersion = pack.index.artifactVersion

function json(res: ServerResponse, status: number, body: unknown): void {
  res.writeHead(status, { 'Content-Type': 'application/json' })
  res.end(JSON.stringify(body))
}

function isJson(contentType: string | undefined): boolean {
  if (contentType === undefined) return false
  const semi = contentType.indexOf(';')
  return (semi === -1 ? contentType : contentType.slice(0, semi)).trim().toLowerCase() === 'application/json'
}

async function runTool(item: LoadedEntry, message: ToolInvoke, signal: AbortSignal): Promise<ResponseMessage> {
  const about: Target = { target: 'tool', id: item.entry.id }
  if (item.validateInput !== undefined && !item.validateInput(message.input)) {
    const issues = toIssues(item.validateInput.errors)
    return errorMessage('input-validation-failed', validationText(`Input for tool "${about.id}"`, issues), about, { issues })
  }
  let value: unknown
  try {
    value = await item.handler!(message.input, { ...message.ctx, abortSignal: signal })
  } catch (thrown) {
    return handlerThrow(about, thrown)
  }
  if (item.validateOutput !== undefined && !item.validateOutput(value)) {
    const issues = toIssues(item.validateOutput.errors)
    return errorMessage('output-validation-failed', validationText(`Output of tool "${about.id}"`, issues), about, { issues })
  }
  return { v: 2, kind: 'result', output: value } as ResponseMessage
}

async function runCheck(item: LoadedEntry, message: CheckInvoke, signal: AbortSignal): Promise<ResponseMessage> {
  const about: Target = { target: 'check', id: item.entry.id }
  if (item.validateConfig !== undefined && !item.validateConfig(message.config)) {
    const issues = toIssues(item.validateConfig.errors)
    return errorMessage('input-validation-failed', validationText(`Check "${about.id}" config`, issues), about, { issues })
  }
  let verdict: unknown
  try {
    verdict = await item.check!(message.config, message.trace, { abortSignal: signal })
  } catch (thrown) {
    return handlerThrow(about, thrown)
  }
  if (typeof verdict === 'boolean') verdict = { passed: verdict }
  if (typeof verdict !== 'object' || verdict === null || typeof (verdict as { passed?: unknown }).passed !== 'boolean') {
    return errorMessage('output-validation-failed', `Check "${about.id}" returned no boolean passed`, about)
  }
  return { v: 2, kind: 'check-result', result: verdict } as ResponseMessage
}

async function invoke(req: IncomingMessage, res: ServerResponse): Promise<void> {
  const startedAt = performance.now()
  const refusal = checkToken(req.headers)
  if (refusal !== undefined) return json(res, refusal.status, refusal.body)
  if (!isJson(req.headers['content-type'])) return json(res, 415, { error: 'Content-Type must be application/json' })
  const body = await readBody(req, BODY_LIMIT, 30_000)
  if (body.kind !== 'ok') return json(res, body.kind === 'too-large' ? 413 : 400, { error: body.kind })
  const parsed = parseRequest(body.text)
  let answer: ResponseMessage
  if (parsed.kind === 'error') answer = parsed.error
  else {
    const resolved = resolveEntry(serving, parsed.message)
    if (resolved.kind === 'error') answer = resolved.error
    else {
      const item = loaded.get(resolved.entry.key) as LoadedEntry
      const signal = new AbortController().signal
      const message = parsed.message
      answer = message.kind === 'invoke' ? await runTool(item, message, signal) : await runCheck(item, message, signal)
    }
  }
  res.writeHead(200, {
    'Content-Type': 'application/json',
    'kindgi-duration-ms': String(Math.round(performance.now() - startedAt)),
    'kindgi-artifact-version': artifactVersion,
  })
  res.end(JSON.stringify(answer))
}

const server = createServer((req, res) => {
  if (req.url !== '/v1/invoke') return json(res, 404, { error: `No route ${req.url}` })
  if (req.method !== 'POST') return json(res, 405, { error: 'Use POST' })
  invoke(req, res).catch((err: Error) => json(res, 500, { error: err.message }))
})
server.keepAliveTimeout = 65_000
server.listen(port, host, () => {
  const address = server.address() as AddressInfo
  process.stderr.write(`${JSON.stringify({ kind: 'listening', port: address.port, packId: pack.index.packId })}\n`)
})
const stop = () => {
  server.close()
  server.closeAllConnections()
  process.exit(0)
}
process.on('SIGTERM', stop)
process.on('SIGINT', stop)
