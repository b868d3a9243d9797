// Global setup of `npm run test:container`: finds or starts a container engine, makes sure the
// base images the files name exist (stand-ins built locally where nothing can be pulled), and
// builds docker/Dockerfile once with the README's own build command. Without an engine every
// container test is skipped, and one line says what was therefore not tested.
import { existsSync, readFileSync } from 'node:fs'
import type { TestProject } from 'vitest/node'
import { docker, DOCKER, ENGINE_SCRIPT, IMAGE, ROOT, run, type Engine } from './engine.js'

/** The base images docker/Dockerfile and docker/compose.yaml name. */
const BASES: Array<{ image: string; make: string[] }> = [
  { image: 'node:24-bookworm-slim', make: ['node-base', '24', 'bookworm'] },
  { image: 'haproxy:3.0', make: ['lb-image', 'haproxy:3.0'] },
]
const NOT_TESTED =
  'not tested: building docker/Dockerfile, docker run with the README flags, the baked-pack image, `docker compose up` with --watch, the scaling rehearsal behind HAProxy'

function lastLines(text: string, n = 8): string {
  return text.trim().split('\n').slice(-n).join('\n')
}

/** The README's build command, with this suite's tag: what a user runs, not a variant of it. */
export function readmeBuildArgs(tag: string): string[] {
  const readme = readFileSync(`${ROOT}README.md`, 'utf8')
  const line = /^docker build (-f docker\/Dockerfile .*)$/m.exec(readme)?.[1]
  if (line === undefined) throw new Error('README.md has no `docker build -f docker/Dockerfile …` line')
  const args = line.trim().split(/\s+/)
  const t = args.indexOf('-t')
  if (t === -1) throw new Error(`the README's docker build line names no -t tag: ${line}`)
  args[t + 1] = tag
  return ['build', ...args]
}

async function prepare(): Promise<Engine> {
  const none = (skip: string): Engine => ({ skip, images: [], imageBytes: 0, buildSeconds: 0 })
  const haveScript = existsSync(ENGINE_SCRIPT)
  if (haveScript) {
    const up = await run('bash', [ENGINE_SCRIPT, 'up'], { timeoutMs: 600_000 })
    if (up.code !== 0) return none(`${ENGINE_SCRIPT} up failed (${lastLines(up.stderr || up.stdout, 3)})`)
  }
  const info = await docker(['info', '--format', '{{.ServerVersion}}'], { timeoutMs: 20_000 })
  if (info.code !== 0) return none(`no container engine answers \`${DOCKER} info\` and there is no ${ENGINE_SCRIPT} to start one`)

  const images: string[] = []
  for (const base of BASES) {
    let present = (await docker(['image', 'inspect', base.image], { timeoutMs: 20_000 })).code === 0
    if (!present && haveScript) {
      const made = await run('bash', [ENGINE_SCRIPT, ...base.make], { timeoutMs: 600_000 })
      if (made.code !== 0) return none(`could not build a stand-in for ${base.image}: ${lastLines(made.stderr || made.stdout, 3)}`)
      present = true
    }
    if (!present) present = (await docker(['pull', base.image], { timeoutMs: 300_000 })).code === 0
    if (!present) return none(`${base.image} is neither here nor pullable`)
    const comment = (await docker(['history', '--no-trunc', '--format', '{{.Comment}}', base.image])).stdout.trim().split('\n').at(-1) ?? ''
    images.push(/stand-in/.test(comment) ? `${base.image} = ${comment}` : `${base.image} = as pulled`)
  }

  const started = performance.now()
  const build = await docker(readmeBuildArgs(IMAGE), { timeoutMs: 600_000, env: { ...process.env, DOCKER_BUILDKIT: '1' } })
  if (build.code !== 0) throw new Error(`docker build of docker/Dockerfile failed:\n${lastLines(build.stdout + build.stderr, 40)}`)
  const buildSeconds = (performance.now() - started) / 1000
  const imageBytes = Number((await docker(['image', 'inspect', '--format', '{{.Size}}', IMAGE])).stdout.trim())
  return { skip: undefined, images, imageBytes, buildSeconds }
}

export default async function setup(project: TestProject): Promise<void> {
  const engine = await prepare()
  if (engine.skip !== undefined) {
    console.warn(`container tests skipped: ${engine.skip}; ${NOT_TESTED}`)
  } else {
    const server = (await docker(['version', '--format', '{{.Server.Version}}'])).stdout.trim()
    const compose = (await docker(['compose', 'version', '--short'])).stdout.trim()
    console.log(`container tests: engine ${server}, compose ${compose}; ${IMAGE} built in ${engine.buildSeconds.toFixed(1)} s, ${(engine.imageBytes / 1e6).toFixed(0)} MB`)
    for (const line of engine.images) console.log(`container tests: base image ${line}`)
  }
  project.provide('engine', engine)
}
