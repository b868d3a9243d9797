// The deployment files (issue 5), checked without a Docker engine: the Dockerfile, compose and
// the Kubernetes manifests carry the strict posture, and agree with each other (and with the
// README's run flags) on the user, the port, the token file, the pack path and the drain timing.
import { spawnSync } from 'node:child_process'
import { existsSync, readdirSync, readFileSync } from 'node:fs'
import { basename, dirname, join, resolve } from 'node:path'
import { validate } from 'dockerfile-utils'
import { describe, expect, it } from 'vitest'
import { parse, parseAllDocuments } from 'yaml'
import { readDockerfile } from '../helpers/dockerfile.js'
import { ROOT } from '../helpers/host.js'

const DOCKER = join(ROOT, 'docker')
const dockerfile = readDockerfile(join(DOCKER, 'Dockerfile'))
const IMAGE_ENV = dockerfile.env
const TOKEN_FILE = IMAGE_ENV.KINDGI_PACK_SERVICE_TOKEN_FILE as string
const IMAGE_PORT = Number(IMAGE_ENV.PORT)
const IMAGE_USER = dockerfile.all('USER').at(-1)?.args as string
const [IMAGE_UID, IMAGE_GID] = IMAGE_USER.split(':').map(Number)
/** docs/spec/CONTRACT.md §1: calls in flight get up to 8 s after SIGTERM. */
const DRAIN_S = 8

type Service = Record<string, any>
const compose = parse(readFileSync(join(DOCKER, 'compose.yaml'), 'utf8'), { merge: true }) as {
  services: Record<string, Service>
  secrets: Record<string, any>
}
const HOSTS = ['pack-host', 'replica'] as const

/** Kubernetes reads YAML 1.1 (0440 is octal there). */
const manifests = readdirSync(join(DOCKER, 'k8s'))
  .filter((f) => f.endsWith('.yaml'))
  .flatMap((file) =>
    parseAllDocuments(readFileSync(join(DOCKER, 'k8s', file), 'utf8'), { version: '1.1' }).map((d) => ({ file, doc: d.toJS() as Record<string, any> })),
  )
const manifest = (kind: string) => manifests.find((m) => m.doc.kind === kind)?.doc as Record<string, any>
const deployment = manifest('Deployment')
const pod = deployment.spec.template.spec
const container = pod.containers[0]

function seconds(duration: string): number {
  const match = /^(\d+)s$/.exec(duration)
  if (match === null) throw new Error(`not a duration in seconds: ${duration}`)
  return Number(match[1])
}

describe('the Dockerfile', () => {
  it("has no problem dockerfile-utils (the linter behind VS Code's Dockerfile support) reports", () => {
    expect(validate(dockerfile.text)).toEqual([])
    expect(validate(readFileSync(join(DOCKER, 'pack.Dockerfile.example'), 'utf8'))).toEqual([])
  })

  it('builds with dev dependencies and ships only `npm ci --omit=dev` output and the built dist', () => {
    const build = dockerfile.stages.find((s) => s.steps.some((st) => st.keyword === 'RUN' && /\bnpm run build\b/.test(st.args)))
    expect(build?.steps.some((st) => st.keyword === 'RUN' && /^npm ci(?!.*--omit=dev)/.test(st.args))).toBe(true)
    const deps = dockerfile.stages.find((s) => s.steps.some((st) => st.keyword === 'RUN' && /npm ci --omit=dev/.test(st.args)))
    expect(deps?.name).toBeDefined()
    const copies = dockerfile.all('COPY')
    expect(copies).toContainEqual(expect.objectContaining({ flags: { from: deps!.name }, args: expect.stringMatching(/node_modules/) }))
    expect(copies).toContainEqual(expect.objectContaining({ flags: { from: build!.name }, args: expect.stringMatching(/\/dist /) }))
    // Nothing from the build context but package.json: no sources, no dev tooling.
    expect(copies.filter((c) => c.flags.from === undefined).map((c) => c.args)).toEqual(['package.json ./'])
    expect(dockerfile.all('RUN').some((r) => /npm (ci|install|i)\b(?!.*--omit=dev)/.test(r.args))).toBe(false)
  })

  it('ships on a Node 24 slim base by default, one build argument away from another; every FROM names a tag, none latest', () => {
    expect(dockerfile.globalArgs.NODE_IMAGE).toBe('node:24-bookworm-slim')
    for (const stage of dockerfile.stages) {
      expect(stage.rawImage).toBe('${NODE_IMAGE}')
      expect(stage.image).toMatch(/^[a-z0-9./-]+:(?!latest$)[\w.-]+$/)
    }
    expect(dockerfile.final.image).toMatch(/^node:24[.\-a-z0-9]*-slim$/)
  })

  it('has no `# syntax=` line: BuildKit would fetch that frontend from the hub, and an offline build fail', () => {
    expect(dockerfile.text).not.toMatch(/^#\s*syntax\s*=/im)
    expect(readFileSync(join(DOCKER, 'pack.Dockerfile.example'), 'utf8')).not.toMatch(/^#\s*syntax\s*=/im)
  })

  it('runs as a numeric, non-root user and group', () => {
    expect(IMAGE_USER).toMatch(/^\d+:\d+$/)
    expect(IMAGE_UID).toBeGreaterThan(0)
    expect(IMAGE_GID).toBeGreaterThan(0)
  })

  it('starts node itself in exec form, so SIGTERM reaches the service (never npm), with SIGUSR1 unable to open its inspector', () => {
    expect(dockerfile.exec('CMD')?.slice(0, 3)).toEqual(['node', '--disable-sigusr1', 'dist/src/main.js'])
    expect(dockerfile.all('ENTRYPOINT')).toEqual([])
    expect(dockerfile.all('STOPSIGNAL').map((s) => s.args)).toEqual(['SIGTERM'])
    expect(dockerfile.text).not.toMatch(/npm start/)
  })

  it('defaults to the strict posture, /app/index.json inside /app/pack, TMPDIR on /tmp, a token file and a JSON log', () => {
    expect(IMAGE_ENV).toMatchObject({ KINDGI_PACK_SANDBOX: 'strict', KINDGI_PACK_INDEX: '/app/index.json', TMPDIR: '/tmp', NODE_ENV: 'production' })
    // A collector reads JSON, and `docker run -t` must not switch the log to lines for people.
    expect(IMAGE_ENV.KINDGI_PACK_LOG_FORMAT).toBe('json')
    // Outside /app (host and pack): under strict the host refuses a token file pack code could read.
    expect(TOKEN_FILE).toMatch(/^\/run\/secrets\/.+/)
    expect(IMAGE_ENV).not.toHaveProperty('KINDGI_PACK_SERVICE_TOKEN')
    expect(dockerfile.all('WORKDIR').at(-1)?.args).toBe('/app')
    expect(dockerfile.exec('CMD')).toEqual(['node', '--disable-sigusr1', 'dist/src/main.js', '--module-root', '/app/pack'])
    expect(dockerfile.all('RUN').map((r) => r.args)).toContainEqual(expect.stringContaining('ln -s pack/index.json /app/index.json'))
    expect(dockerfile.all('EXPOSE').map((e) => Number(e.args))).toEqual([IMAGE_PORT])
  })

  it('checks /healthz in exec form with a script the build produces', () => {
    const check = dockerfile.exec('HEALTHCHECK')
    expect(check).toEqual(['node', 'dist/src/healthcheck.js'])
    expect(existsSync(join(ROOT, 'src/healthcheck.ts'))).toBe(true)
    expect(readFileSync(join(ROOT, 'src/healthcheck.ts'), 'utf8')).toContain('/healthz')
  })

  it("follows hadolint's rules that apply: COPY not ADD, absolute WORKDIR, no MAINTAINER, sudo or cd", () => {
    const steps = dockerfile.stages.flatMap((s) => s.steps)
    expect(steps.filter((s) => s.keyword === 'ADD' || s.keyword === 'MAINTAINER')).toEqual([]) // DL3020, DL4000
    for (const w of steps.filter((s) => s.keyword === 'WORKDIR')) expect(w.args).toMatch(/^\//) // DL3000
    for (const r of steps.filter((s) => s.keyword === 'RUN')) {
      expect(r.args).not.toMatch(/\bsudo\b/) // DL3004
      expect(r.args).not.toMatch(/(^|&&\s*)cd\s/) // DL3003
      if (/apt-get install/.test(r.args)) expect(r.args).toMatch(/--no-install-recommends/) // DL3015
    }
    expect(dockerfile.exec('CMD')).toBeDefined() // DL3025: JSON form
  })

  it('.dockerignore lets in only what the build copies: no node_modules, dist, tests, .git or dev token', () => {
    const ignore = readFileSync(join(ROOT, '.dockerignore'), 'utf8')
      .split('\n')
      .filter((l) => l.trim() !== '' && !l.startsWith('#'))
    expect(ignore[0]).toBe('**')
    const allowed = ignore.filter((l) => l.startsWith('!')).map((l) => l.slice(1).replace(/\/\*\*$/, ''))
    const copied = dockerfile.stages
      .flatMap((s) => s.steps)
      .filter((s) => s.keyword === 'COPY' && s.flags.from === undefined)
      .flatMap((s) => s.args.split(/\s+/).slice(0, -1))
    expect(new Set(copied)).toEqual(new Set(allowed))
  })
})

describe('compose', () => {
  it('has no error dclint (the compose linter, schema included) reports, here and at the repo root', () => {
    const bin = join(ROOT, 'node_modules/dclint/bin/dclint.cjs')
    const run = spawnSync(process.execPath, [bin, '-q', join(DOCKER, 'compose.yaml'), join(ROOT, 'compose.yaml')], { encoding: 'utf8' })
    expect(run.stdout + run.stderr).not.toMatch(/\berror\b/)
    expect(run.status).toBe(0)
  })

  it('`docker compose up` works from the repo root: compose.yaml includes docker/compose.yaml', () => {
    const root = parse(readFileSync(join(ROOT, 'compose.yaml'), 'utf8')) as { include: string[] }
    expect(root.include).toEqual(['docker/compose.yaml'])
  })

  describe.each(HOSTS)('host service %s', (name) => {
    const service = compose.services[name] as Service
    it('runs with the strict posture: read-only root, caps dropped, no-new-privileges, init, image user', () => {
      expect(service.read_only).toBe(true)
      expect(service.cap_drop).toEqual(['ALL'])
      // `=` is the separator now; engines warn that `no-new-privileges:true` is deprecated.
      expect(service.security_opt).toEqual(['no-new-privileges=true'])
      expect(service.init).toBe(true)
      expect(service.user).toBe(IMAGE_USER)
      expect(service.build).toEqual({ context: '..', dockerfile: 'docker/Dockerfile' })
    })
    it('has memory and pid limits, a noexec tmpfs at TMPDIR, and a stop grace above the drain', () => {
      expect(service.mem_limit).toMatch(/^\d+[mg]$/)
      expect(service.pids_limit).toBeGreaterThanOrEqual(64)
      expect(service.tmpfs).toEqual([expect.stringMatching(new RegExp(`^${IMAGE_ENV.TMPDIR}:.*\\bnoexec\\b`))])
      expect(seconds(service.stop_grace_period)).toBeGreaterThan(DRAIN_S)
    })
    it('reads the token from the secret file the image expects, never from a variable', () => {
      expect(service.secrets).toEqual([{ source: 'kindgi_pack_service_token', target: TOKEN_FILE }])
      expect(service.environment.KINDGI_PACK_SERVICE_TOKEN_FILE).toBe(TOKEN_FILE)
      expect(service.environment).not.toHaveProperty('KINDGI_PACK_SERVICE_TOKEN')
    })
    it('mounts examples/hello-pack read-only at /app/pack', () => {
      expect(service.volumes).toEqual(['../examples/hello-pack:/app/pack:ro'])
      expect(existsSync(resolve(DOCKER, '../examples/hello-pack/index.json'))).toBe(true)
    })
  })

  it("the dev service serves on localhost:8080 with the image's command plus --watch", () => {
    const dev = compose.services['pack-host'] as Service
    expect(dev.profiles).toBeUndefined()
    expect(dev.ports).toEqual([`127.0.0.1:\${PACK_HOST_PORT:-8080}:${IMAGE_PORT}`])
    expect(dev.command).toEqual([...(dockerfile.exec('CMD') as string[]), '--watch'])
    const secret = compose.secrets.kindgi_pack_service_token
    expect(readFileSync(resolve(DOCKER, secret.file), 'utf8').trim()).toBe('dev-token')
  })

  it('the scale profile runs three replicas behind HAProxy, which waits for them to be healthy', () => {
    const replica = compose.services.replica as Service
    const lb = compose.services.lb as Service
    expect(replica.profiles).toEqual(['scale'])
    expect(replica.deploy.replicas).toBe(3)
    expect(replica.ports).toBeUndefined()
    expect(replica.command).toBeUndefined() // the image's own command: no --watch in the rehearsal
    expect(lb.profiles).toEqual(['scale'])
    expect(lb.image).toMatch(/^haproxy:[\w.-]+$/)
    expect(lb.depends_on).toEqual({ replica: { condition: 'service_healthy' } })
    expect(lb.volumes).toEqual(['./haproxy.cfg:/usr/local/etc/haproxy/haproxy.cfg:ro'])
    expect(lb.ports).toEqual(['127.0.0.1:${PACK_LB_PORT:-8081}:8080'])
    expect(lb).toMatchObject({ read_only: true, cap_drop: ['ALL'], security_opt: ['no-new-privileges=true'] })
  })
})

describe('the HAProxy load balancer', () => {
  const cfg = readFileSync(join(DOCKER, 'haproxy.cfg'), 'utf8').replace(/#.*$/gm, '')
  const directives = (name: string) => [...cfg.matchAll(new RegExp(`^\\s*${name}\\b(.*)$`, 'gm'))].map((m) => m[1]!.trim())
  const ms = (value: string) => {
    const m = /^(\d+)(ms|s)?$/.exec(value)
    if (m === null) throw new Error(`not a time: ${value}`)
    return Number(m[1]) * (m[2] === 's' ? 1000 : 1)
  }
  const timeout = (name: string) => ms(directives(`timeout ${name}`)[0] ?? '')

  it('sends a call again only after a failed connect or a 503, to another replica', () => {
    expect(directives('retry-on')).toEqual(['conn-failure 503'])
    expect(directives('option redispatch')).toEqual(['1'])
    expect(Number(directives('retries')[0])).toBeGreaterThanOrEqual(2)
  })
  it('opens a fresh connection to the replica for every call, so a request is never written onto one it closed', () => {
    expect(directives('option http-server-close')).toEqual([''])
    expect(directives('http-reuse')).toEqual([])
  })
  it('checks every replica on /readyz, expecting 200, and takes one out after failed checks or a failed connect', () => {
    expect(directives('http-check send')).toEqual([expect.stringMatching(/^meth GET uri \/readyz\b/)])
    expect(directives('http-check expect')).toEqual(['status 200'])
    const server = directives('default-server')[0] ?? ''
    expect(server).toMatch(/\bcheck\b/)
    expect(ms(/\binter (\S+)/.exec(server)![1]!)).toBeLessThanOrEqual(1000)
    expect(server).toMatch(/\bobserve layer4\b.*\bon-error mark-down\b/)
    expect(timeout('check')).toBeLessThanOrEqual(2000)
  })
  it("finds the replicas through Compose's DNS on the image's port, and waits longer than a call's 120 s deadline", () => {
    expect(directives('server-template')).toEqual([expect.stringMatching(new RegExp(`^replica \\S+ replica:${IMAGE_PORT}$`))])
    expect(directives('nameserver')).toEqual(['dns 127.0.0.11:53'])
    expect(timeout('server')).toBeGreaterThan(120_000)
    expect(timeout('connect')).toBeLessThanOrEqual(1000)
    expect(directives('bind')).toEqual([':8080'])
  })
  it('nginx is gone, and no file uses the deprecated `no-new-privileges:true`', () => {
    expect(existsSync(join(DOCKER, 'nginx.conf'))).toBe(false)
    for (const file of ['compose.yaml', 'Dockerfile']) expect(readFileSync(join(DOCKER, file), 'utf8')).not.toContain('no-new-privileges:')
  })
})

describe('Kubernetes manifests', () => {
  it('define a Deployment, Service, HorizontalPodAutoscaler, PodDisruptionBudget and NetworkPolicy, all in the kustomization', () => {
    expect(manifests.map((m) => m.doc.kind).sort()).toEqual([
      'Deployment',
      'HorizontalPodAutoscaler',
      'Kustomization',
      'NetworkPolicy',
      'PodDisruptionBudget',
      'Service',
    ])
    const listed = manifest('Kustomization').resources as string[]
    expect(new Set(listed)).toEqual(new Set(manifests.filter((m) => m.doc.kind !== 'Kustomization').map((m) => m.file)))
  })

  it("the pod matches the image's posture: non-root numeric user, RuntimeDefault seccomp, no service account token", () => {
    expect(pod.securityContext).toMatchObject({ runAsNonRoot: true, runAsUser: IMAGE_UID, runAsGroup: IMAGE_GID, seccompProfile: { type: 'RuntimeDefault' } })
    expect(pod.automountServiceAccountToken).toBe(false)
    expect(container.securityContext).toEqual({
      allowPrivilegeEscalation: false,
      readOnlyRootFilesystem: true,
      privileged: false,
      capabilities: { drop: ['ALL'] },
    })
    expect(container.resources.limits.memory).toMatch(/^\d+(Mi|Gi)$/)
  })

  it("probes readiness on /readyz and liveness on /healthz, on the image's port", () => {
    const http = container.ports.find((p: any) => p.name === 'http')
    expect(http.containerPort).toBe(IMAGE_PORT)
    expect(container.readinessProbe.httpGet).toEqual({ path: '/readyz', port: 'http' })
    expect(container.livenessProbe.httpGet).toEqual({ path: '/healthz', port: 'http' })
  })

  it('pauses in preStop so endpoints update, and gives the drain its 8 s within the grace period', () => {
    const [cmd, pause] = container.lifecycle.preStop.exec.command as [string, string]
    expect(cmd).toBe('sleep')
    expect(Number(pause)).toBeGreaterThanOrEqual(3)
    expect(pod.terminationGracePeriodSeconds).toBeGreaterThan(Number(pause) + DRAIN_S)
  })

  it('mounts /tmp as an in-memory emptyDir and the token Secret as the file the image expects', () => {
    const env = Object.fromEntries((container.env as Array<{ name: string; value: string }>).map((e) => [e.name, e.value]))
    expect(env.KINDGI_PACK_SERVICE_TOKEN_FILE).toBe(TOKEN_FILE)
    expect(env).not.toHaveProperty('KINDGI_PACK_SERVICE_TOKEN')
    expect(env.KINDGI_PACK_SANDBOX).toBe('strict')
    const mount = (path: string) => container.volumeMounts.find((m: any) => m.mountPath === path)
    const volume = (name: string) => pod.volumes.find((v: any) => v.name === name)
    expect(volume(mount(IMAGE_ENV.TMPDIR!).name).emptyDir.medium).toBe('Memory')
    const tokenMount = mount(dirname(TOKEN_FILE))
    expect(tokenMount.readOnly).toBe(true)
    const secret = volume(tokenMount.name).secret
    expect(secret.items).toEqual([{ key: 'token', path: basename(TOKEN_FILE) }])
    expect(secret.defaultMode).toBe(0o440)
  })

  it("the Service, HPA, PDB and NetworkPolicy all select the Deployment's pods", () => {
    const labels = deployment.spec.template.metadata.labels
    expect(manifest('Service').spec.selector).toEqual(labels)
    expect(manifest('Service').spec.ports).toEqual([{ name: 'http', port: IMAGE_PORT, targetPort: 'http' }])
    expect(manifest('PodDisruptionBudget').spec.selector.matchLabels).toEqual(labels)
    expect(manifest('NetworkPolicy').spec.podSelector.matchLabels).toEqual(labels)
    expect(manifest('HorizontalPodAutoscaler').spec.scaleTargetRef).toEqual({ apiVersion: 'apps/v1', kind: 'Deployment', name: deployment.metadata.name })
    expect(manifest('HorizontalPodAutoscaler').spec.minReplicas).toBeGreaterThanOrEqual(2)
  })

  it('the NetworkPolicy denies every egress by default', () => {
    const policy = manifest('NetworkPolicy').spec
    expect(policy.policyTypes).toContain('Egress')
    expect(policy.egress).toEqual([])
  })
})

describe("the README's docker run flags", () => {
  const readme = readFileSync(join(ROOT, 'README.md'), 'utf8')
  const run = /```sh\n([^`]*docker run [^`]*)```/.exec(readme)?.[1] ?? ''
  it('are the posture compose and Kubernetes use', () => {
    const dev = compose.services['pack-host'] as Service
    expect(run).toContain('--read-only')
    expect(run).toContain('--cap-drop=ALL')
    expect(run).toContain('--security-opt=no-new-privileges=true')
    expect(run).not.toContain('no-new-privileges:')
    expect(run).toContain('--init')
    expect(run).toContain(`--tmpfs ${dev.tmpfs[0]}`)
    expect(run).toContain(`--memory=${dev.mem_limit}`)
    expect(run).toContain(`--pids-limit=${dev.pids_limit}`)
    expect(run).toContain(`:${TOKEN_FILE}:ro`)
    expect(run).toContain(':/app/pack:ro')
  })
})
