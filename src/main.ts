#!/usr/bin/env node
// The kindgi-pack-host entry: read config, boot the pack, listen, and drain on SIGTERM/SIGINT.
import type { Server } from 'node:http'
import type { AddressInfo } from 'node:net'
import { isatty } from 'node:tty'
import { bootPack } from './boot.js'
import { HELP, SERVE_USAGE, SUBCOMMANDS } from './cli/commands.js'
import { loadConfig, type Config } from './config.js'
import { createApp } from './http/app.js'
import type { FrontState } from './http/front-state.js'
import { createFrontServer } from './http/front-server.js'
import { createInFlight } from './http/in-flight.js'
import { createLog, type Log } from './log.js'
import { chooseLogFormat } from './log-format.js'
import { NO_METRICS, type Metrics } from './metrics.js'
import { startMetricsServer } from './metrics-server.js'
import { onEscapedErrors } from './escaped-errors.js'
import { createCap } from './pool/dispatcher.js'
import { envDroppedReporter } from './pool/worker-env.js'
import { tokenFileProblem } from './pool/strict-flags.js'
import { packStamps, startReloading, type Reloader } from './reload.js'
import { landlock } from './pool/landlock.js'

export const DRAIN_MS = 8_000

async function serveCommand(argv: string[]): Promise<void> {
  // The serve command's options are the top-level usage's.
  if (argv.includes('--help') || argv.includes('-h')) return exitAfterOutput(0, `${HELP}\n`)
  if (chooseLogFormat(process.env.KINDGI_PACK_LOG_FORMAT, isatty(2)) === 'pretty') {
    // NO_COLOR (no-color.org): any value but the empty one turns colours off.
    const colorize = isatty(2) && (process.env.NO_COLOR ?? '') === ''
    return (await import('./pretty-log.js')).serveForPeople(process.argv.slice(2), colorize)
  }
  const log = createLog()
  const loaded = loadConfig(argv, process.env)
  if (loaded.kind === 'error') {
    log.error('config-invalid', { problems: loaded.problems })
    process.exit(1)
  }
  const config = loaded.config
  // Under strict every tool is: refused before the pack loads. Otherwise the pack says (boot.ts).
  const exposed = config.sandbox === 'strict' ? tokenFileProblem(config, config.tokenFile, { strict: true, warm: false }) : undefined
  if (exposed !== undefined) {
    log.error('config-invalid', { problems: [exposed] })
    process.exit(1)
  }
  // Pack code must never see the token: drop it before any pack process or worker starts.
  delete process.env.KINDGI_PACK_SERVICE_TOKEN
  delete process.env.KINDGI_PACK_SERVICE_TOKEN_FILE

  // Signals are handled from here on: one that arrives while the pack loads stops the boot.
  let stop: () => Promise<void> = async () => {
    log.info('stopped')
    process.exit()
  }
  let stopping: Promise<void> | undefined
  const stopOnce = () => (stopping ??= stop())
  onSignals(stopOnce)
  onEscapedErrors(log, stopOnce)

  // Metrics exist before the boot so worker replacements during it are counted; the gauges
  // read `state`, which exists before anyone can scrape.
  let state: FrontState | undefined
  const prometheus =
    config.metricsPort === undefined
      ? undefined
      : (await import('./prometheus.js')).createPrometheusMetrics({
          callsInFlight: () => state?.inFlight.count() ?? 0,
          workersByPosture: () => state?.serving?.pool.workersByPosture() ?? {},
        })
  const metrics: Metrics = prometheus ?? NO_METRICS

  // Taken before the pack loads: a module saved while it does is then reloaded, not missed.
  const stampsBeforeBoot = config.watch ? packStamps(config, undefined) : undefined
  const cap = createCap(config.maxConcurrency)
  const booted = await bootPack(config, process.env, log, metrics, cap)
  if (booted.kind === 'error') {
    log.error('boot-failed', { problems: booted.problems })
    process.exit(1)
  }
  const front: FrontState = { serving: booted.serving, draining: false, config, log, inFlight: createInFlight(), metrics }
  state = front
  const reportDroppedEnv = envDroppedReporter(log)
  reportDroppedEnv(booted.droppedEnv)
  if (booted.serving.missingEnv.length > 0) log.warn('missing-env', { check: config.envCheck, names: booted.serving.missingEnv })

  let metricsServer: Server | undefined
  let server: Server
  try {
    metricsServer = prometheus === undefined ? undefined : await startMetricsServer(prometheus.registry, config.host, config.metricsPort as number)
    server = await listen(front, config)
  } catch (err) {
    // A port in use is an operator's problem to fix: say which, as a line, not a stack trace.
    log.error('boot-failed', { problems: [`Cannot listen: ${(err as Error).message}`] })
    // Its pack processes end first: a strict spare still starting while the exit removed its
    // folder wrote its helper's complaint after this line (a CI run, stop 36).
    await booted.serving.pool.close().catch(() => undefined)
    process.exit(1)
  }
  const port = (server.address() as AddressInfo).port
  const index = booted.serving.pack.index
  const reloader = config.watch ? startReloading(front, config, log, { cap, metrics, reportDroppedEnv, stampsBeforeBoot }) : undefined
  stop = () => drain(front, server, log, reloader)
  const metricsPort = metricsServer === undefined ? {} : { metricsPort: (metricsServer.address() as AddressInfo).port }
  // Whether the kernel walls pack processes off from the front (pool/landlock.ts): an operator must be able to see it.
  const wall = landlock()
  const landlockField = wall.kind === 'on' ? { landlock: 'on' } : { landlock: 'off', landlockWhy: wall.why }
  log.info('listening', { port, packId: index.packId, artifactVersion: index.artifactVersion, ...metricsPort, ...landlockField })
}

function listen(state: FrontState, config: Config): Promise<Server> {
  const app = createApp(state, { bodyTimeoutMs: config.front.bodyTimeoutMs })
  return new Promise((resolve, reject) => {
    const server = createFrontServer(app.fetch, config.front)
    server.once('listening', () => resolve(server))
    server.once('error', reject)
    server.listen(config.port, config.host)
  })
}

function onSignals(handler: () => Promise<void>): void {
  const onSignal = () => void handler()
  process.on('SIGTERM', onSignal)
  process.on('SIGINT', onSignal)
  // SIGUSR1 would open the front's inspector to anyone who can signal it, pack code in a
  // process of the same user included (docs/security.md). A listener keeps Node from opening
  // it where the front was not started with --disable-sigusr1 (the image's command is).
  process.on('SIGUSR1', () => undefined)
  // Started by pretty-log.ts, the process that prints this log for people: once it is gone,
  // even killed outright, nothing written here is read any more. Stop as on SIGTERM.
  if (process.channel !== undefined) {
    process.channel.unref()
    process.once('disconnect', onSignal)
  }
}

async function drain(state: FrontState, server: Server, log: Log, reloader: Reloader | undefined): Promise<void> {
  log.info('draining')
  reloader?.close()
  // Keep accepting while draining: probes and new invokes must get their 503, not a refused connection.
  state.draining = true
  let timer: NodeJS.Timeout | undefined
  await Promise.race([state.inFlight.idle(), new Promise((r) => (timer = setTimeout(r, DRAIN_MS)))])
  clearTimeout(timer)
  const serving = state.serving
  server.close()
  server.closeAllConnections()
  await serving?.pool.close().catch(() => undefined)
  log.info('stopped')
  // 0, or 1 after an escaped error (onEscapedErrors).
  process.exit()
}

async function main(argv: string[]): Promise<void> {
  const [first, ...rest] = argv
  if (first === '--help' || first === '-h' || first === 'help') return exitAfterOutput(0, `${HELP}\n`)
  if (first === undefined || first.startsWith('--')) return serveCommand(argv)
  if (first === 'serve') return serveCommand(rest)
  const subcommand = SUBCOMMANDS[first]
  if (subcommand !== undefined) return exitAfterOutput(await (await subcommand.load()).run(rest))
  process.stderr.write(`kindgi-pack-host: unknown command "${first}". Usage: ${SERVE_USAGE}; commands: ${Object.keys(SUBCOMMANDS).join(', ')} (see --help)\n`)
  process.exit(2)
}

/** Exits once stdout has taken everything: a script piping a subcommand's output gets all of it. */
function exitAfterOutput(code: number, text = ''): void {
  process.stdout.write(text, () => process.exit(code))
}

await main(process.argv.slice(2))
