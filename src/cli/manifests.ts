// `kindgi-pack-host manifests`: prints the JSON array of ToolManifests (POST /v1/tools
// bodies) an index makes, each checked against the spec first; exit 1 with problems instead.
import { commandArgs, requireFlags, UUID } from './args.js'
import { count, EXIT, outJson, printProblems, usageError } from './output.js'
import { manifestsFromIndex, type ManifestsResult } from './tool-manifest.js'

export const usage = `Usage: kindgi-pack-host manifests --index FILE --project-id UUID [--image REF] [--bundle-map FILE] [--json]

Prints a JSON array with one ToolManifest (the body of POST /v1/tools) for each tool in the
index: id, projectId, description, version, input, output and every optional field the
index carries. With --image, each tool with a handler also gets codeArtifactRef (kind "oci",
the image, its modulePath and the index's artifactVersion); a declarative tool (one with a
spec) gets none, since the runtime runs it itself. Each manifest is checked against the
ToolManifest rules of the spec before anything is printed.

  --index FILE        the pack's index.json (required)
  --project-id UUID   the project the tools are registered in (required)
  --image REF         the OCI image the pack service runs, e.g. registry.example/acme/pack:1.4.0
  --bundle-map FILE   the map the image serves with (checked; codeArtifactRef keeps the
                      index's modulePath, the name the runtime and the service share)
  --json              on problems, print { "ok": false, "problems": [{ "path", "message" }] }

Exit status: 0 printed, 1 problems (nothing printed on stdout but them), 2 bad arguments.`

const SPEC = { flags: ['index', 'project-id', 'image', 'bundle-map'], switches: ['json'], valueNames: { 'bundle-map': 'path' } } as const

export type ManifestArgs = { indexPath: string; projectId: string; image: string | undefined; bundleMap: string | undefined }

/** The arguments `manifests` and `register` share, or the problems with them. */
export function manifestArgs(
  flags: Partial<Record<'index' | 'project-id' | 'image' | 'bundle-map', string>>,
): { kind: 'ok'; args: ManifestArgs } | { kind: 'error'; problems: string[] } {
  const problems = requireFlags(flags, ['index', 'project-id'])
  const projectId = flags['project-id']
  if (projectId !== undefined && !UUID.test(projectId)) problems.push(`--project-id must be a UUID, not "${projectId}"`)
  if (problems.length > 0) return { kind: 'error', problems }
  return { kind: 'ok', args: { indexPath: flags.index as string, projectId: projectId as string, image: flags.image, bundleMap: flags['bundle-map'] } }
}

export async function run(argv: string[]): Promise<number> {
  const parsed = commandArgs('manifests', argv, SPEC, usage)
  if (parsed.kind === 'exit') return parsed.code
  const checked = manifestArgs(parsed.flags)
  if (checked.kind === 'error') return usageError('manifests', checked.problems)

  const built = manifestsOrProblems(checked.args, parsed.switches.has('json'), 'no manifest printed')
  if (built.kind === 'exit') return built.code
  outJson(built.manifests)
  return EXIT.ok
}

/** The manifests of the index, or the problems printed and the exit code to end with. */
export function manifestsOrProblems(
  args: ManifestArgs,
  json: boolean,
  consequence: string,
): Exclude<ManifestsResult, { kind: 'error' }> | { kind: 'exit'; code: number } {
  const built = manifestsFromIndex(args.indexPath, { projectId: args.projectId, image: args.image, bundleMap: args.bundleMap })
  if (built.kind === 'ok') return built
  printProblems(`${args.indexPath}: ${count(built.problems.length, 'problem')}; ${consequence}`, built.problems, json)
  return { kind: 'exit', code: EXIT.problems }
}
