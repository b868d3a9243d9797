// The module shapes docs/spec/CONTRACT.md §6 accepts for a tool handler and a check, in its order.
export type HandlerFn = (input: unknown, ctx: unknown) => unknown
export type CheckFn = (config: unknown, trace: unknown, bindings: unknown) => unknown

type Exports = Record<string, unknown>

function fn(value: unknown): value is (...args: unknown[]) => unknown {
  return typeof value === 'function'
}

export function findHandler(mod: Exports): HandlerFn | undefined {
  if (fn(mod.default)) return mod.default as HandlerFn
  for (const name of ['handler', 'run']) if (fn(mod[name])) return mod[name] as HandlerFn
  for (const name of ['default', 'handler', 'run']) {
    const holder = mod[name]
    if (typeof holder !== 'object' || holder === null) continue
    const h = holder as Exports
    if (fn(h.handler)) return h.handler.bind(holder) as HandlerFn
    if (fn(h.run)) return h.run.bind(holder) as HandlerFn
  }
  return undefined
}

export function findCheck(mod: Exports): CheckFn | undefined {
  for (const name of ['evaluate', 'default', 'check']) {
    const value = mod[name]
    if (fn(value)) return value as CheckFn
    if (typeof value === 'object' && value !== null && fn((value as Exports).evaluate)) {
      const holder = value as Exports
      return (holder.evaluate as CheckFn).bind(holder)
    }
  }
  return undefined
}
