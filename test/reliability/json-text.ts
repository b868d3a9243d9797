// JSON as text the fuzzer controls: objects may repeat a key, and any value may be raw text
// (nesting far deeper than JSON.stringify can write, numbers past double range), so the
// host is fed what real clients could send, not only what JSON.stringify produces.
export type JsonText = { t: 'raw'; text: string } | { t: 'obj'; entries: Array<[string, JsonText]> } | { t: 'arr'; items: JsonText[] }

export const raw = (text: string): JsonText => ({ t: 'raw', text })
export const val = (value: unknown): JsonText => raw(JSON.stringify(value) ?? 'null')
export const obj = (entries: Record<string, JsonText>): JsonText => ({ t: 'obj', entries: Object.entries(entries) })

/** A value nested `depth` times: [[[…]]] or {"a":{"a":…}}, written without recursion. */
export function deep(depth: number, kind: 'arr' | 'obj'): JsonText {
  return kind === 'arr' ? raw('['.repeat(depth) + ']'.repeat(depth)) : raw(`${'{"a":'.repeat(depth)}0${'}'.repeat(depth)}`)
}

export function render(node: JsonText): string {
  const out: string[] = []
  const stack: Array<JsonText | string> = [node]
  while (stack.length > 0) {
    const item = stack.pop() as JsonText | string
    if (typeof item === 'string') {
      out.push(item)
      continue
    }
    if (item.t === 'raw') out.push(item.text)
    else if (item.t === 'arr') {
      stack.push(']')
      for (let i = item.items.length - 1; i >= 0; i--) {
        stack.push(item.items[i] as JsonText)
        if (i > 0) stack.push(',')
      }
      out.push('[')
    } else {
      stack.push('}')
      for (let i = item.entries.length - 1; i >= 0; i--) {
        const [k, v] = item.entries[i] as [string, JsonText]
        stack.push(v)
        stack.push(`${JSON.stringify(k)}:`)
        if (i > 0) stack.push(',')
      }
      out.push('{')
    }
  }
  return out.join('')
}

/** Every path to a value inside objects and arrays (the root is []). */
export function paths(node: JsonText, prefix: Array<string | number> = []): Array<Array<string | number>> {
  const found: Array<Array<string | number>> = [prefix]
  if (node.t === 'obj') for (const [i, [, v]] of node.entries.entries()) found.push(...paths(v, [...prefix, i]))
  if (node.t === 'arr') for (const [i, v] of node.items.entries()) found.push(...paths(v, [...prefix, i]))
  return found
}

/** A copy of `node` with the value at `path` (entry or item indexes) given to `edit`. */
export function editAt(node: JsonText, path: Array<string | number>, edit: (old: JsonText) => JsonText | undefined): JsonText | undefined {
  if (path.length === 0) return edit(node)
  const [head, ...rest] = path as [number, ...number[]]
  if (node.t === 'obj') {
    const entries: Array<[string, JsonText]> = []
    node.entries.forEach(([k, v], i) => {
      const next = i === head ? editAt(v, rest, edit) : v
      if (next !== undefined) entries.push([k, next])
    })
    return { t: 'obj', entries }
  }
  if (node.t === 'arr') {
    const items: JsonText[] = []
    node.items.forEach((v, i) => {
      const next = i === head ? editAt(v, rest, edit) : v
      if (next !== undefined) items.push(next)
    })
    return { t: 'arr', items }
  }
  return node
}
