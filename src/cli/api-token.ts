// The token `register` sends to the runtime: from --token-file, KINDGI_API_TOKEN_FILE (a
// mounted secret) or KINDGI_API_TOKEN, trimmed and checked like the service's own token.
// The token is returned, never printed.
import { readFileSync } from 'node:fs'
import { tokenProblem } from '../config.js'

export type TokenResult = { kind: 'ok'; token: string } | { kind: 'error'; problem: string }

/** An argument wins over the environment; the two environment variables together are refused. */
export function readApiToken(tokenFile: string | undefined, env: NodeJS.ProcessEnv): TokenResult {
  const fromVar = env.KINDGI_API_TOKEN
  const file = tokenFile ?? (env.KINDGI_API_TOKEN_FILE || undefined)
  if (file !== undefined) {
    if (tokenFile === undefined && fromVar !== undefined && fromVar.trim() !== '') {
      return { kind: 'error', problem: 'Set KINDGI_API_TOKEN or KINDGI_API_TOKEN_FILE, not both' }
    }
    const where = tokenFile !== undefined ? `--token-file ${file}` : `KINDGI_API_TOKEN_FILE ${file}`
    let raw: string
    try {
      raw = readFileSync(file, 'utf8')
    } catch (err) {
      return { kind: 'error', problem: `${where} cannot be read: ${(err as Error).message}` }
    }
    return checked(raw.trim(), `The token in ${where}`)
  }
  if (fromVar === undefined) {
    return { kind: 'error', problem: 'No API token: set KINDGI_API_TOKEN, or KINDGI_API_TOKEN_FILE or --token-file naming a file that holds it' }
  }
  return checked(fromVar.trim(), 'KINDGI_API_TOKEN')
}

function checked(token: string, what: string): TokenResult {
  const bad = tokenProblem(token)
  return bad === undefined ? { kind: 'ok', token } : { kind: 'error', problem: `${what} ${bad}` }
}
