// Reads a Dockerfile into stages and instructions (through dockerfile-ast, the parser behind
// VS Code's Dockerfile support), so tests can check the image without a Docker engine.
import { readFileSync } from 'node:fs'
import { DockerfileParser, type Instruction } from 'dockerfile-ast'

export type Step = { keyword: string; args: string; flags: Record<string, string> }
/** `image` has the ARGs declared before the first FROM filled in with their defaults; `rawImage` is as written. */
export type Stage = { image: string; rawImage: string; name: string | undefined; steps: Step[] }

export type Dockerfile = {
  text: string
  stages: Stage[]
  /** The stage that becomes the image. */
  final: Stage
  /** ARGs declared before the first FROM, with their defaults. */
  globalArgs: Record<string, string>
  /** ENV of the final stage, in order. */
  env: Record<string, string>
  /** The exec-form command of `keyword` (CMD, ENTRYPOINT, or HEALTHCHECK's CMD) in the final stage. */
  exec(keyword: 'CMD' | 'ENTRYPOINT' | 'HEALTHCHECK'): string[] | undefined
  /** Every step named `keyword` in the final stage. */
  all(keyword: string): Step[]
}

function flagsOf(instruction: Instruction): Record<string, string> {
  const flags: Record<string, string> = {}
  const withFlags = instruction as Instruction & { getFlags?: () => Array<{ getName(): string; getValue(): string | null }> }
  for (const flag of withFlags.getFlags?.() ?? []) flags[flag.getName()] = flag.getValue() ?? ''
  return flags
}

export function readDockerfile(path: string): Dockerfile {
  const text = readFileSync(path, 'utf8')
  const parsed = DockerfileParser.parse(text)
  const stages: Stage[] = []
  const env: Record<string, string> = {}
  const globalArgs: Record<string, string> = {}
  for (const instruction of parsed.getInstructions()) {
    const keyword = instruction.getKeyword()
    if (keyword === 'FROM') {
      const from = parsed.getFROMs().find((f) => f.getRange().start.line === instruction.getRange().start.line)
      const rawImage = from?.getImage() ?? ''
      const image = rawImage.replace(/\$\{(\w+)\}|\$(\w+)/g, (whole, a: string | undefined, b: string | undefined) => globalArgs[(a ?? b) as string] ?? whole)
      stages.push({ image, rawImage, name: from?.getBuildStage() ?? undefined, steps: [] })
      continue
    }
    const stage = stages.at(-1)
    if (stage === undefined) {
      // ARG before the first FROM: usable in every FROM.
      const arg = /^(\w+)(?:=(.*))?$/.exec((instruction.getArgumentsContent() ?? '').trim())
      if (keyword === 'ARG' && arg !== null) globalArgs[arg[1] as string] = arg[2] ?? ''
      continue
    }
    stage.steps.push({ keyword, args: instruction.getArgumentsContent() ?? '', flags: flagsOf(instruction) })
  }
  const final = stages.at(-1) as Stage
  for (const instruction of parsed.getInstructions()) {
    if (instruction.getKeyword() !== 'ENV' || instruction.getRange().start.line < finalStart(parsed)) continue
    const props = (instruction as unknown as { getProperties(): Array<{ getName(): string; getValue(): string | null }> }).getProperties()
    for (const p of props) env[p.getName()] = p.getValue() ?? ''
  }
  const all = (keyword: string) => final.steps.filter((s) => s.keyword === keyword)
  return {
    text,
    stages,
    final,
    globalArgs,
    env,
    all,
    exec(keyword) {
      const step = all(keyword).at(-1)
      if (step === undefined) return undefined
      const json = keyword === 'HEALTHCHECK' ? step.args.replace(/^CMD\s+/, '') : step.args
      try {
        const value: unknown = JSON.parse(json)
        return Array.isArray(value) && value.every((v) => typeof v === 'string') ? value : undefined
      } catch {
        return undefined // shell form
      }
    },
  }
}

function finalStart(parsed: ReturnType<typeof DockerfileParser.parse>): number {
  return parsed.getFROMs().at(-1)?.getRange().start.line ?? 0
}
