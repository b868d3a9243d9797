// Reads a Dockerfile into stages and instructions (through dockerfile-ast, the parser behind
// VS Code's Dockerfile support), so tests can check the image without a Docker engine.
import { readFileSync } from 'node:fs'
import { DockerfileParser, type Instruction } from 'dockerfile-ast'

export type Step = { keyword: string; args: string; flags: Record<string, string> }
export type Stage = { image: string; name: string | undefined; steps: Step[] }

export type Dockerfile = {
  text: string
  stages: Stage[]
  /** The stage that becomes the image. */
  final: Stage
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
  for (const instruction of parsed.getInstructions()) {
    const keyword = instruction.getKeyword()
    if (keyword === 'FROM') {
      const from = parsed.getFROMs().find((f) => f.getRange().start.line === instruction.getRange().start.line)
      stages.push({ image: from?.getImage() ?? '', name: from?.getBuildStage() ?? undefined, steps: [] })
      continue
    }
    const stage = stages.at(-1)
    if (stage === undefined) continue // ARG before the first FROM
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
