// `kindgi-pack-host check`: everything the service checks at boot (pack code loaded in
// workers, never here), without listening, plus what a deploy would refuse. Exit 0 clean,
// 1 with problems; `--fix` rewrites the index in canonical form.
import { readFileSync, renameSync, writeFileSync } from 'node:fs'
import { dirname, resolve } from 'node:path'
import { bootPack } from '../boot.js'
import { FRONT_DEFAULTS, type Config } from '../config.js'
import type { Log } from '../log.js'
import { loadPackIndex } from '../pack-index.js'
import { POSTURES, type Posture } from '../protocol/runnable-entry.js'
import { commandArgs, requireFlags } from './args.js'
import { locateBootProblem } from './boot-problems.js'
import { canonicalIndex, canonicalProblems } from './canonical-json.js'
import { deployProblems } from './deploy-rules.js'
import { packStdoutToStderr } from '../pool/pack-process-group.js'
import { count, err, EXIT, out, outJson, printProblems, stdoutToStderr, usageError, type Problem } from './output.js'

export const usage = `Usage: kindgi-pack-host check --index FILE [--module-root DIR] [--bundle-map FILE] [--sandbox POSTURE] [--fix] [--built-in-check ID,...] [--json]

Checks a pack before it is deployed: everything the service checks at boot (the index, every
module loading in a worker thread, every schema compiling), without listening; and what a
deploy would refuse: an index not in canonical form, duplicate ids, tool versions that are
not major.minor.patch, limits that are not integers >= 1, unknown sandbox or network.kind
values, env names under the reserved KINDGI_ prefix, a tool the runtime's ToolManifest rules
refuse, a guardrail naming a built-in check without checkBuiltIn: true.

  --index FILE            the pack's index.json (required)
  --module-root DIR       where modulePaths resolve (default: the index file's folder)
  --bundle-map FILE       a JSON object of source path → bundle path (relative to the module
                          root): a module it covers is loaded from its bundle, as serve does
  --sandbox POSTURE       the least posture every tool loads at (none, context-isolated,
                          strict), as the service's KINDGI_PACK_SANDBOX sets it; default: that
                          variable, else none. strict loads each tool as the image serves it
  --fix                   rewrite the index in canonical form first (lists sorted by id, keys
                          sorted, two-space indent, trailing newline); its indexHash changes
  --built-in-check IDS    comma-separated ids of the runtime's built-in checks; the ones the
                          index marks checkBuiltIn are known already
  --json                  print { "ok": boolean, "problems": [{ "path", "message" }] }

Exit status: 0 no problems, 1 problems (one a line, each with its JSON path), 2 bad arguments.`

const SPEC = {
  flags: ['index', 'module-root', 'bundle-map', 'sandbox', 'built-in-check'],
  switches: ['fix', 'json'],
  valueNames: { 'bundle-map': 'path' },
} as const

export async function run(argv: string[]): Promise<number> {
  const args = commandArgs('check', argv, SPEC, usage)
  if (args.kind === 'exit') return args.code
  const missing = requireFlags(args.flags, ['index'])
  if (missing.length > 0) return usageError('check', missing)

  const shown = args.flags.index as string
  const indexPath = resolve(shown)
  const moduleRoot = resolve(args.flags['module-root'] ?? dirname(indexPath))
  const bundleMap = args.flags['bundle-map'] === undefined ? undefined : resolve(args.flags['bundle-map'])
  const builtInChecks = (args.flags['built-in-check'] ?? '')
    .split(',')
    .map((id) => id.trim())
    .filter((id) => id !== '')
  const json = args.switches.has('json')
  // A pack that loads under none may not under strict (a package outside its folder): checked as it will be served.
  const sandbox = args.flags.sandbox ?? process.env.KINDGI_PACK_SANDBOX ?? 'none'
  if (!isPosture(sandbox)) {
    const from = args.flags.sandbox === undefined ? 'KINDGI_PACK_SANDBOX' : '--sandbox'
    return usageError('check', [`${from} must be "none", "context-isolated" or "strict", not "${sandbox}"`])
  }
  // Pack code never sees a Kindgi credential, here as in `serve`; check needs none.
  for (const name of ['KINDGI_API_TOKEN', 'KINDGI_API_TOKEN_FILE', 'KINDGI_PACK_SERVICE_TOKEN', 'KINDGI_PACK_SERVICE_TOKEN_FILE']) delete process.env[name]

  const file = readIndexText(indexPath)
  if (file !== undefined && args.switches.has('fix')) file.text = fix(indexPath, file)
  const problems = await checkPack(indexPath, moduleRoot, bundleMap, sandbox, builtInChecks)
  if (file !== undefined) problems.push(...canonicalProblems(file.text, file.parsed))

  if (problems.length > 0) {
    printProblems(`${shown}: ${count(problems.length, 'problem')}`, problems, json)
    return EXIT.problems
  }
  if (json) outJson({ ok: true, problems: [] })
  else out(`${shown}: no problems`)
  return EXIT.ok
}

/** The file and its parse, when it has one; an unreadable file is the boot check's to report. */
function readIndexText(indexPath: string): { text: string; parsed: unknown } | undefined {
  try {
    const text = readFileSync(indexPath, 'utf8')
    return { text, parsed: JSON.parse(text) as unknown }
  } catch {
    return undefined
  }
}

function fix(indexPath: string, file: { text: string; parsed: unknown }): string {
  const canonical = canonicalIndex(file.parsed)
  if (canonical === file.text) return canonical
  // Write beside and rename: an interrupted fix never leaves half an index.
  const temporary = `${indexPath}.${process.pid}.tmp`
  writeFileSync(temporary, canonical)
  renameSync(temporary, indexPath)
  err(`Rewrote ${indexPath} in canonical form (its indexHash changed).`)
  return canonical
}

function isPosture(value: string): value is Posture {
  return (POSTURES as readonly string[]).includes(value)
}

async function checkPack(indexPath: string, moduleRoot: string, bundleMap: string | undefined, sandbox: Posture, builtInChecks: string[]): Promise<Problem[]> {
  const loaded = loadPackIndex(indexPath, moduleRoot, sandbox, bundleMap)
  if (loaded.kind === 'error') return loaded.problems.map((p) => locateBootProblem(p, undefined))
  const index = loaded.pack.index
  const booted = await bootModules(indexPath, moduleRoot, bundleMap, sandbox)
  const boot = booted.map((p) => locateBootProblem(p, index))
  // Where boot already found a problem, its own sentence says it best.
  const bootPaths = new Set(boot.map((p) => p.path))
  const deploy = deployProblems(index, { builtInChecks }).filter((p) => !bootPaths.has(p.path))
  return [...boot, ...deploy]
}

/** Loads every module in worker threads exactly as `serve` boots, then stops them. */
async function bootModules(indexPath: string, moduleRoot: string, bundleMap: string | undefined, sandbox: Posture): Promise<string[]> {
  const config: Config = {
    indexPath,
    moduleRoot,
    host: undefined,
    port: 0,
    token: '',
    maxConcurrency: 1, // one worker a group proves its modules load
    workerThreads: 1,
    tenantId: undefined,
    envCheck: 'warn',
    envFilter: true,
    sandbox,
    watch: false,
    tokenFile: undefined,
    bundleMap,
    metricsPort: undefined,
    front: FRONT_DEFAULTS, // never listens
  }
  const restore = stdoutToStderr()
  packStdoutToStderr(true)
  try {
    const booted = await bootPack(config, process.env, quietLog)
    if (booted.kind === 'error') return booted.problems
    await booted.serving.pool.close()
    return []
  } finally {
    packStdoutToStderr(false)
    restore()
  }
}

const quietLog: Log = { info: () => undefined, warn: () => undefined, error: () => undefined }
