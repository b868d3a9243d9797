// Runs the built kindgi-pack-host subcommands as a real process, asynchronously, so a test
// can serve a fake runtime from its own event loop while the command talks to it.
import { spawn } from 'node:child_process'
import { baseEnv, BIN, FIXTURES } from './host.js'

export const CLI_PACK = `${FIXTURES}/cli-pack/index.json`
export const CLI_BROKEN_PACK = `${FIXTURES}/cli-broken-pack/index.json`
export const PROJECT_ID = '2489e9ad-2ee2-4e00-8ec9-32d5f69181c0'

export type CliRun = { code: number | null; stdout: string; stderr: string }

/** Runs `kindgi-pack-host ...args` with this process's environment minus any KINDGI_* setting. */
export function runCli(args: string[], env: Record<string, string | undefined> = {}): Promise<CliRun> {
  const merged: Record<string, string> = baseEnv()
  for (const [k, v] of Object.entries(env)) {
    if (v === undefined) delete merged[k]
    else merged[k] = v
  }
  const proc = spawn(process.execPath, [BIN, ...args], { env: merged, stdio: ['ignore', 'pipe', 'pipe'] })
  let stdout = ''
  let stderr = ''
  proc.stdout.on('data', (d: Buffer) => (stdout += d.toString()))
  proc.stderr.on('data', (d: Buffer) => (stderr += d.toString()))
  return new Promise((resolve, reject) => {
    proc.once('error', reject)
    proc.once('close', (code) => resolve({ code, stdout, stderr }))
  })
}
