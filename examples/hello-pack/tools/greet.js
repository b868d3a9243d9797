// A tool handler: the module's default export gets the validated input (schema defaults
// filled in) and ctx.
export default async function greet(input, ctx) {
  ctx.log.info('greeting', { name: input.name })
  return { greeting: `${input.greeting}, ${input.name}!` }
}
