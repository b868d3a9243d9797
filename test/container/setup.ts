// Global setup of `npm run test:container`: finds or starts a container engine, makes sure the
// base images the files name exist (stand-ins built locally where nothing can be pulled), and
// builds docker/Dockerfile once with the README's own build command. Without an engine every
// container test is skipped, and one line says what was therefore not tested.
import { existsSync, readFileSync } from 'node:fs'
import type { TestProject } from 'vitest/node'
import { docker, DOCKER, ENGINE_SCRIPT, IMAGE, ROOT, run, type Engine } from './engine.js'

/** The base images docker/Dockerfile (by default and with NODE_IMAGE for 26) and docker/compose.yaml name. */
const BASES: Array<{ image: string; make: string[] }> = [
  { image: 'node:24-bookworm-slim', make: ['node-base', '24', 'bookworm'] },
  { image: 'node:26-bookworm-slim', make: ['node-base', '26', 'bookworm'] },
  { image: 'haproxy:3.0', make: ['lb-image', 'haproxy:3.0'] },
]
/**
 * The node:26 stand-in (Debian minbase + the npm binary) lacks libatomic.so.1, which Node 26's
 * binary needs and the official image, whose node runs, must carry. Where the stand-in's node
 * cannot start, the Node 26 test builds on this: the stand-in plus Debian's libatomic1.
 */
export const NODE_26_IMAGE = 'kph-stand-in/node:26-bookworm-slim-libatomic1'

async function node26(haveScript: boolean): Promise<string | undefined> {
  const runs = await docker(['run', '--rm', '--network', 'none', 'node:26-bookworm-slim', 'node', '--version'], { timeoutMs: 60_000 })
  if (runs.code === 0) return 'node:26-bookworm-slim'
  if (!/libatomic\.so\.1/.test(runs.stderr) || !haveScript) return undefined
  const lib = await run('bash', [ENGINE_SCRIPT, 'debian-image', 'kph-libatomic1:bookworm', 'libatomic1'], { timeoutMs: 600_000 })
  if (lib.code !== 0) return undefined
  const dockerfile =
    'FROM kph-libatomic1:bookworm AS lib\nFROM node:26-bookworm-slim\nCOPY --from=lib /usr/lib/x86_64-linux-gnu/libatomic.so.1* /usr/lib/x86_64-linux-gnu/\n'
  const built = await docker(['build', '-t', NODE_26_IMAGE, '-'], { input: dockerfile, timeoutMs: 120_000, env: { ...process.env, DOCKER_BUILDKIT: '1' } })
  return built.code === 0 ? NODE_26_IMAGE : undefined
}

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
  const none = (skip: string): Engine => ({ skip, images: [], imageBytes: 0, buildSeconds: 0, node26Image: undefined })
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

  const node26Image = await node26(haveScript)
  if (node26Image === NODE_26_IMAGE) images.push(`${NODE_26_IMAGE} = the node:26 stand-in plus Debian's libatomic1 (its node needs libatomic.so.1)`)

  const started = performance.now()
  const build = await docker(readmeBuildArgs(IMAGE), { timeoutMs: 600_000, env: { ...process.env, DOCKER_BUILDKIT: '1' } })
  if (build.code !== 0) throw new Error(`docker build of docker/Dockerfile failed:\n${lastLines(build.stdout + build.stderr, 40)}`)
  const buildSeconds = (performance.now() - started) / 1000
  const imageBytes = Number((await docker(['image', 'inspect', '--format', '{{.Size}}', IMAGE])).stdout.trim())
  return { skip: undefined, images, imageBytes, buildSeconds, node26Image }
}

export default async function setup(project: TestProject): Promise<void> {
  const engine = await prepare()
  if (engine.skip !== undefined) {
    console.warn(`container tests skipped: ${engine.skip}; ${NOT_TESTED}`)
  } else {
    const server = (await docker(['version', '--format', '{{.Server.Version}}'])).stdout.trim()
    const compose = (await docker(['compose', 'version', '--short'])).stdout.trim()
    console.log(
      `container tests: engine ${server}, compose ${compose}; ${IMAGE} built in ${engine.buildSeconds.toFixed(1)} s, ${(engine.imageBytes / 1e6).toFixed(0)} MB`,
    )
    for (const line of engine.images) console.log(`container tests: base image ${line}`)
    if (engine.node26Image === undefined) console.warn('container tests: no Node 26 image whose node runs: the Node 26 build (NODE_IMAGE) is not tested')
  }
  project.provide('engine', engine)
}
