// `kindgi-pack-host register`: takes a pack's tools to a runtime (POST /v1/tools), a
// progress line per tool on stderr and a summary on stdout. Safe to rerun: each tool is
// sent with the same Idempotency-Key every time, and one already there is not an error.
import { setTimeout as wait } from 'node:timers/promises'
import { readApiToken } from './api-token.js'
import { commandArgs, requireFlags } from './args.js'
import { registrationKey } from './idempotency.js'
import { manifestArgs, manifestsOrProblems } from './manifests.js'
import { err, EXIT, out, outJson, usageError } from './output.js'
import { MAX_RETRY_WAIT_MS } from './register-answer.js'
import { jsonResult, printDryRun, progressLine, retryLine, summaryTable } from './register-report.js'
import { sendAll, type Outcome, type Prepared } from './register-send.js'

const CONCURRENCY = 4
const MAX_ATTEMPTS = 5
const REQUEST_TIMEOUT_MS = 60_000

export const usage = `Usage: kindgi-pack-host register --index FILE --project-id UUID --api URL [--image REF]
                                 [--bundle-map FILE] [--token-file FILE] [--dry-run] [--json]

Registers every tool of the index with a Kindgi runtime: one POST <api>/v1/tools for each,
its body the manifest "kindgi-pack-host manifests" prints, up to ${CONCURRENCY} at a time.

  --index FILE        the pack's index.json (required)
  --project-id UUID   the project the tools are registered in (required)
  --api URL           the runtime's API, e.g. https://api.kindgi.example (required)
  --image REF         the OCI image the pack service runs (adds codeArtifactRef)
  --bundle-map FILE   the map the image serves with (checked, as manifests does)
  --token-file FILE   a file holding the API token (else KINDGI_API_TOKEN_FILE or
                      KINDGI_API_TOKEN); sent as Authorization: Bearer, never printed
  --dry-run           print each request it would send (token hidden) and send nothing
  --json              print { "ok", "results": [...] } (with --dry-run, { "requests": [...] })

Each tool is sent with an Idempotency-Key derived from the project, pack id, tool id,
version and artifactVersion, so a rerun sends the same keys. A tool already registered
(409 tool-already-registered) is reported as such, not as an error. 409
idempotency-key-in-flight, 429 and 503 are sent again with the same key after Retry-After
(at most ${MAX_ATTEMPTS} attempts, each wait at most ${MAX_RETRY_WAIT_MS / 1000} s). Any other answer, or none
within ${REQUEST_TIMEOUT_MS / 1000} s, stops new requests; a 401, 403 or 404 stops the retries too.

Exit status: 0 every tool registered or already there, 1 a problem or a failed tool,
2 bad arguments or no token.`

const SPEC = {
  flags: ['index', 'project-id', 'image', 'bundle-map', 'api', 'token-file'],
  switches: ['dry-run', 'json'],
  valueNames: { 'bundle-map': 'path' },
} as const

export async function run(argv: string[]): Promise<number> {
  const parsed = commandArgs('register', argv, SPEC, usage)
  if (parsed.kind === 'exit') return parsed.code
  const checked = manifestArgs(parsed.flags)
  const url = toolsUrl(parsed.flags.api)
  if (checked.kind === 'error' || url === undefined) {
    const badUrl = parsed.flags.api !== undefined && url === undefined ? [`--api must be an http(s) URL, not "${parsed.flags.api}"`] : []
    return usageError('register', [...(checked.kind === 'error' ? checked.problems : []), ...requireFlags(parsed.flags, ['api']), ...badUrl])
  }
  const json = parsed.switches.has('json')

  const built = manifestsOrProblems(checked.args, json, 'nothing sent')
  if (built.kind === 'exit') return built.code
  const { index, manifests } = built
  const requests: Prepared[] = manifests.map((manifest) => ({
    manifest,
    key: registrationKey({
      projectId: checked.args.projectId,
      packId: index.packId,
      toolId: manifest.id,
      version: manifest.version,
      artifactVersion: index.artifactVersion,
    }),
    label: manifest.version === undefined ? manifest.id : `${manifest.id}@${manifest.version}`,
  }))

  if (parsed.switches.has('dry-run')) {
    printDryRun(url, requests, json)
    return EXIT.ok
  }
  const token = readApiToken(parsed.flags['token-file'], process.env)
  if (token.kind === 'error') return usageError('register', [token.problem])

  const outcomes = await sendAll(requests, {
    url,
    token: token.token,
    fetch,
    sleep: (ms, signal) => wait(ms, undefined, { signal }).catch(() => undefined),
    concurrency: CONCURRENCY,
    maxAttempts: MAX_ATTEMPTS,
    requestTimeoutMs: REQUEST_TIMEOUT_MS,
    onRetry: (p, attempt, waitMs, status, error) => err(retryLine(p, attempt, MAX_ATTEMPTS, waitMs, status, error)),
    onOutcome: (p, outcome) => err(progressLine(p, outcome)),
  })
  const ok = outcomes.every((o) => o.kind === 'registered' || o.kind === 'already-registered')
  if (json) outJson({ ok, results: requests.map((p, i) => jsonResult(p, outcomes[i] as Outcome)) })
  else out(summaryTable(requests, outcomes))
  return ok ? EXIT.ok : EXIT.problems
}

function toolsUrl(api: string | undefined): string | undefined {
  if (api === undefined) return undefined
  try {
    const base = new URL(api.endsWith('/') ? api : `${api}/`)
    if (base.protocol !== 'http:' && base.protocol !== 'https:') return undefined
    return new URL('v1/tools', base).href
  } catch {
    return undefined
  }
}
