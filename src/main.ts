#!/usr/bin/env node
// The kindgi-pack-host entry: read config, boot the pack, listen, and drain on SIGTERM/SIGINT.
import type { Server } from 'node:http'
import type { AddressInfo } from 'node:net'
import { bootPack } from './boot.js'
import { loadConfig, type Config } from './config.js'
import { createApp } from './http/app.js'
import type { FrontState } from './http/front-state.js'
import { createFrontServer } from './http/front-server.js'
import { createInFlight } from './http/in-flight.js'
import { createLog, type Log } from './log.js'

export const DRAIN_MS = 8_000

async function serveCommand(argv: string[]): Promise<void> {
  const log = createLog()
  const loaded = loadConfig(argv, process.env)
  if (loaded.kind === 'error') {
    log.error('config-invalid', { problems: loaded.problems })
    process.exit(1)
  }
  const config = loaded.config
  // Pack code must never see the token: drop it before any worker starts.
  delete process.env.KINDGI_PACK_SERVICE_TOKEN
  delete process.env.KINDGI_PACK_SERVICE_TOKEN_FILE

  // Signals are handled from here on: one that arrives while the pack loads stops the boot.
  let stop: () => Promise<void> = async () => {
    log.info('stopped')
    process.exit(0)
  }
  onSignals(() => stop())

  const booted = await bootPack(config, process.env, log)
  if (booted.kind === 'error') {
    log.error('boot-failed', { problems: booted.problems })
    process.exit(1)
  }
  const state: FrontState = { serving: booted.serving, draining: false, config, log, inFlight: createInFlight() }
  if (booted.serving.missingEnv.length > 0) log.warn('missing-env', { check: config.envCheck, names: booted.serving.missingEnv })

  const server = await listen(state, config)
  const port = (server.address() as AddressInfo).port
  const index = booted.serving.pack.index
  stop = () => drain(state, server, log)
  log.info('listening', { port, packId: index.packId, artifactVersion: index.artifactVersion })
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
  let started = false
  const once = () => {
    if (started) return
    started = true
    void handler()
  }
  process.on('SIGTERM', once)
  process.on('SIGINT', once)
}

async function drain(state: FrontState, server: Server, log: Log): Promise<void> {
  log.info('draining')
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
  process.exit(0)
}

async function main(argv: string[]): Promise<void> {
  const [first, ...rest] = argv
  if (first === undefined || first.startsWith('--')) return serveCommand(argv)
  if (first === 'serve') return serveCommand(rest)
  process.stderr.write(`kindgi-pack-host: unknown command "${first}". Usage: kindgi-pack-host [serve] --index FILE [--module-root DIR] [--host ADDR]\n`)
  process.exit(2)
}

await main(process.argv.slice(2))
