// Loads a pack's TypeScript (.ts, .mts, .cts) in the worker, as every module loads. Node's own
// type stripping does the common case (annotations only: positions are kept, so stacks point
// at the .ts lines without a source map). TypeScript that is more than annotations (enum,
// namespace, parameter properties) goes through amaro, the Node.js project's own transformer,
// with an inline source map: Node 26 no longer transforms in core, and amaro is only loaded
// by a worker whose pack needs it. Relative `./x.js` imports written for tsc find `./x.ts`.
import { readFileSync } from 'node:fs'
import { createRequire, registerHooks, stripTypeScriptTypes, type ModuleFormat } from 'node:module'
import { dirname, join } from 'node:path'
import { fileURLToPath, pathToFileURL } from 'node:url'
import { isTypeScript, TYPESCRIPT_FILE } from '../src/protocol/runnable-entry.js'
import { pinnedSource } from './pinned-sources.js'

const JS_TO_TS: Record<string, string> = { '.js': '.ts', '.mjs': '.mts', '.cjs': '.cts' }
const require = createRequire(import.meta.url)

type Amaro = { transformSync(code: string, options: object): { code: string; map?: string } }
let amaro: Amaro | undefined
let compileFunction: typeof import('node:vm')['compileFunction'] | undefined

type AmaroSyntaxError = { message: string; startLine?: number; startColumn?: number }

/**
 * Plain JavaScript for a TypeScript source. Node's stripping takes what it can; the rest, and
 * any file it refuses, goes to amaro, whose syntax errors say where (Node's do not).
 */
export function toJavaScript(source: string, path: string): string {
  try {
    return stripTypeScriptTypes(source)
  } catch {
    // Transformed below, or reported with its line and column.
  }
  amaro ??= require('amaro') as Amaro
  let out: { code: string; map?: string }
  try {
    out = amaro.transformSync(source, { mode: 'transform', sourceMap: true, filename: pathToFileURL(path).href })
  } catch (err) {
    const e = err as AmaroSyntaxError
    const where = e.startLine === undefined ? path : `${path}:${e.startLine}:${(e.startColumn ?? 0) + 1}`
    throw new SyntaxError(`TypeScript at ${where}: ${e.message ?? String(err)}`)
  }
  const map = out.map === undefined ? '' : `\n//# sourceMappingURL=data:application/json;base64,${Buffer.from(out.map).toString('base64')}`
  return `${out.code}${map}`
}

const packageTypes = new Map<string, string | undefined>()

/** The nearest package.json's "type", as Node decides the format of a .js file. */
function packageType(folder: string): string | undefined {
  if (packageTypes.has(folder)) return packageTypes.get(folder)
  let type: string | undefined
  try {
    type = (JSON.parse(readFileSync(join(folder, 'package.json'), 'utf8')) as { type?: string }).type ?? 'commonjs'
  } catch {
    const parent = dirname(folder)
    type = parent === folder ? undefined : packageType(parent)
  }
  packageTypes.set(folder, type)
  return type
}

/** As Node decides: .mts ESM, .cts CommonJS, .ts by package.json "type", else by its syntax. */
function formatOf(path: string, code: string): ModuleFormat {
  const kind = TYPESCRIPT_FILE.exec(path)?.[1]
  if (kind === 'm') return 'module'
  if (kind === 'c') return 'commonjs'
  const type = packageType(dirname(path))
  if (type === 'module' || type === 'commonjs') return type
  // Set as the loader is installed, the only way here.
  const compile = compileFunction as NonNullable<typeof compileFunction>
  try {
    compile(code, [], { filename: path })
    return 'commonjs'
  } catch {
    return 'module'
  }
}

let installed = false

/** Installs the hooks in this thread; call before any pack module is imported. */
export function installTypeScriptLoader(): void {
  if (installed) return
  installed = true
  // node:vm only for a pack with TypeScript, taken before any of its modules load.
  compileFunction = (process.getBuiltinModule('node:vm') as typeof import('node:vm')).compileFunction
  // Source maps only matter for transformed files; stripped ones keep their positions.
  process.setSourceMapsEnabled(true)
  registerHooks({
    resolve(specifier, context, nextResolve) {
      try {
        return nextResolve(specifier, context)
      } catch (err) {
        const ext = /\.[cm]?js$/.exec(specifier)?.[0]
        const fromTs = context.parentURL !== undefined && isTypeScript(context.parentURL)
        if (ext === undefined || !fromTs || !specifier.startsWith('.')) throw err
        return nextResolve(specifier.slice(0, -ext.length) + JS_TO_TS[ext], context)
      }
    },
    load(url, context, nextLoad) {
      if (!url.startsWith('file:') || !isTypeScript(new URL(url).pathname)) return nextLoad(url, context)
      const path = fileURLToPath(url)
      const code = toJavaScript(pinnedSource(path) ?? readFileSync(path, 'utf8'), path)
      return { format: formatOf(path, code), source: code, shortCircuit: true }
    },
  })
}
