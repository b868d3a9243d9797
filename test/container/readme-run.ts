// The README's `docker run` and curl session, read from the README itself and turned into
// argument lists, so the container tests run what a user copies, not a variant of it.
import { readFileSync } from 'node:fs'
import { ROOT } from './engine.js'

const README = readFileSync(`${ROOT}README.md`, 'utf8')

/** Shell words of one command line: whitespace outside quotes splits; '…' and "…" quote. */
function words(line: string): string[] {
  const out: string[] = []
  let word = ''
  let quote: string | undefined
  let any = false
  for (const ch of line) {
    if (quote !== undefined) {
      if (ch === quote) quote = undefined
      else word += ch
    } else if (ch === '"' || ch === "'") {
      quote = ch
      any = true
    } else if (/\s/.test(ch)) {
      if (any) out.push(word)
      word = ''
      any = false
    } else {
      word += ch
      any = true
    }
  }
  if (any) out.push(word)
  return out
}

/** The block in "Deploying" that builds and runs the image. */
function runBlock(): string {
  const block = /```sh\n([^`]*docker run [^`]*)```/.exec(README)?.[1]
  if (block === undefined) throw new Error('README.md has no ```sh block with `docker run`')
  return block
}

/** The README's `chmod` for the token file: the mode it tells users to give it. */
export function readmeTokenMode(): number {
  const mode = /^chmod (0[0-7]{3}) token$/m.exec(runBlock())?.[1]
  if (mode === undefined) throw new Error('the README no longer says `chmod 0NNN token` before docker run')
  return Number.parseInt(mode, 8)
}

export type RunSubstitutions = {
  hostPort: number
  tokenFile: string
  /** The folder mounted at /app/pack; undefined drops that mount (a baked pack). */
  packDir: string | undefined
  /** What `$(stat -c %g token)` prints for tokenFile. */
  tokenGid: number
  image: string
}

/**
 * The README's docker run as arguments after `docker`, with only these changed: the published
 * port, the two host paths, the token file's group (what `$(stat …)` would print), the image
 * tag; and `-d` so the test gets the id back. Every flag is the README's.
 */
export function readmeRunArgs(sub: RunSubstitutions): string[] {
  const command = runBlock()
    .replace(/\\\n\s*/g, ' ')
    .split('\n')
    .find((l) => l.startsWith('docker run '))
  if (command === undefined) throw new Error('README.md: no `docker run` command line')
  const args = words(command).slice(1)
  const out: string[] = []
  for (let i = 0; i < args.length; i++) {
    let a = args[i] as string
    if (a === '-v' && args[i + 1]?.startsWith('$PWD/my-pack:') && sub.packDir === undefined) {
      i++
      continue
    }
    a = a
      .replace(/^127\.0\.0\.1:8080:8080$/, `127.0.0.1:${sub.hostPort}:8080`)
      .replace('$(stat -c %g token)', String(sub.tokenGid))
      .replace(/^\$PWD\/token:/, `${sub.tokenFile}:`)
      .replace(/^\$PWD\/my-pack:/, `${sub.packDir}:`)
      .replace(/^kindgi-pack-host:0\.1\.0$/, sub.image)
    if (a.includes('$')) throw new Error(`README docker run: an argument this test cannot fill in: ${a}`)
    out.push(a)
  }
  if (out[0] !== 'run') throw new Error('README docker run: expected `docker run`')
  return ['run', '-d', ...out.slice(1)]
}

/** The README's `docker build -f pack.Dockerfile …` for a baked pack, with its two tags replaced. */
export function readmeBakeArgs(hostImage: string, tag: string): string[] {
  const line = /`(docker build -f pack\.Dockerfile [^`]+)`/.exec(README)?.[1]
  if (line === undefined) throw new Error('README.md: no `docker build -f pack.Dockerfile …`')
  return words(line)
    .slice(1)
    .map((a) => a.replace(/^HOST_IMAGE=.*$/, `HOST_IMAGE=${hostImage}`).replace(/^my-pack:.*$/, tag))
}

export type CurlStep = { args: string[]; expected: string }

/** The "A curl session against the example" block: each curl command and the line it prints. */
export function readmeCurlSession(port: number): CurlStep[] {
  const block = /## A curl session against the example\n+```console\n([^`]*)```/.exec(README)?.[1]
  if (block === undefined) throw new Error('README.md: no curl session block')
  const joined = block
    .replace(/\\\n\s*/g, ' ')
    .split('\n')
    .filter((l) => l !== '')
  const steps: CurlStep[] = []
  for (let i = 0; i < joined.length; i++) {
    const line = joined[i] as string
    if (!line.startsWith('$ curl ')) continue
    const args = words(line.slice('$ curl '.length)).map((w) => w.replace(/^localhost:8080\//, `http://127.0.0.1:${port}/`))
    steps.push({ args, expected: joined[i + 1] ?? '' })
  }
  return steps
}

/** Whether a printed line matches the README's, where `…` stands for any text. */
export function matchesReadme(actual: string, expected: string): boolean {
  const pattern = expected
    .split('…')
    .map((part) => part.replace(/[.*+?^${}()|[\]\\]/g, '\\$&'))
    .join('.*')
  return new RegExp(`^${pattern}$`).test(actual.trim())
}
