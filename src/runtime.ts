// What this Node.js runtime can do, decided once from process.versions and process.features.
// Everything version-specific (the permission flags, type stripping, the network wall) is read
// from here, so a new Node release changes one file. A runtime too old for what is asked of it
// is a problem string for the one config-invalid line, never an unhandled error.

/** The oldest major we support and test (24 is the LTS; 26 the current release). */
export const MIN_NODE_MAJOR = 24

export type Runtime = {
  version: string
  major: number
  /** `--permission` (stable from 23.5); older runtimes spelled it `--experimental-permission`. */
  permissionFlag: '--permission' | '--experimental-permission'
  /**
   * The permission model gates the network (Node >= 25: without `--allow-net`, listen and
   * connect both fail with ERR_ACCESS_DENIED, for the whole process).
   */
  permissionGatesNet: boolean
  /** Node strips TypeScript annotations natively (`process.features.typescript`). */
  typeStripping: boolean
}

type Versions = { node: string }
type Features = { typescript?: string | false }

export function describeRuntime(versions: Versions = process.versions, features: Features = process.features as Features): Runtime {
  const [major = 0, minor = 0] = versions.node.split('.').map(Number)
  return {
    version: `v${versions.node}`,
    major,
    permissionFlag: major > 23 || (major === 23 && minor >= 5) ? '--permission' : '--experimental-permission',
    permissionGatesNet: major >= 25,
    typeStripping: features.typescript === 'strip' || features.typescript === 'transform',
  }
}

export const RUNTIME: Runtime = describeRuntime()

/** Why this runtime cannot serve at all, or undefined when it can. */
export function runtimeProblem(runtime: Runtime = RUNTIME): string | undefined {
  if (runtime.major >= MIN_NODE_MAJOR) return undefined
  return `Node.js ${runtime.version} is too old: kindgi-pack-host needs Node.js ${MIN_NODE_MAJOR} or later (24 is the LTS, 26 the current release)`
}
