// A TypeScript tool, typed with the package's own types. `import type` is erased when Node
// strips the types, so the module runs wherever the pack is copied; `npm run typecheck` checks
// it against the SDK's source (tsconfig.test.json maps kindgi-pack-host to src/sdk). ctx.log
// writes a log record bound to the call: its tool, its ids and its trace id.
import type { ToolContext } from 'kindgi-pack-host'

type Input = { name: string; greeting: string }
type Output = { greeting: string }

export default async function greet(input: Input, ctx: ToolContext): Promise<Output> {
  ctx.log.info('greeting', { name: input.name })
  return { greeting: `${input.greeting}, ${input.name}!` }
}
