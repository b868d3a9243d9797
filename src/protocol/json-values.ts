// Counts the values of a JSON text before anyone parses it. A line on a pack process's channel
// is bounded in characters (channel-limits.ts), but 15 MiB of `{},` is five million objects,
// and 15 MiB of `"k1":0,` one object of 1.6 million keys: the spawner parsed such a line and
// V8-serialized it, the front deserialized it, each for seconds on its one thread and up to
// ~1 GB (stop 29, two red-team passes). The host's own messages carry what pack code says
// inside strings, and hold a handful of values an item outside them; so a text with more than
// the bound outside its strings is pack code's. Strings are skipped with indexOf and a sticky
// regular expression, not a character at a time: a long answer's line is mostly one string,
// and counting it a character at a time cost as much again as parsing it.

/** The rest of a string with escapes in it, through its closing quote. */
const STRING_REST = /[^"\\]*(?:\\[\s\S][^"\\]*)*"/y

/**
 * Whether `text` holds more than `max` of what parsing it makes outside strings: objects and
 * arrays (`{`, `[`), members (`:`) and elements (`,`).
 */
export function valuesPast(text: string, max: number): boolean {
  return valuesIn(text, max) > max
}

/**
 * How many of those `text` holds, counted up to one past `max` (it stops there). A text that
 * is not JSON (a string without its end) is counted to where it breaks, which the parser says.
 */
export function valuesIn(text: string, max: number): number {
  let count = 0
  // Where the next backslash is, found once a string starts past the last one found (NONE: no more).
  let backslash = -1
  for (let i = 0; i < text.length; i++) {
    const c = text.charCodeAt(i)
    if (c === QUOTE) {
      if (backslash <= i) {
        const at = text.indexOf('\\', i + 1)
        backslash = at === -1 ? NONE : at
      }
      const quote = text.indexOf('"', i + 1)
      if (quote === -1) return count
      if (backslash === NONE || backslash > quote) i = quote
      else {
        STRING_REST.lastIndex = i + 1
        if (!STRING_REST.test(text)) return count
        i = STRING_REST.lastIndex - 1
      }
    } else if ((c === OPEN_OBJECT || c === OPEN_ARRAY || c === COLON || c === COMMA) && ++count > max) return count
  }
  return count
}

const NONE = Number.POSITIVE_INFINITY
const QUOTE = 34
const OPEN_OBJECT = 123
const OPEN_ARRAY = 91
const COLON = 58
const COMMA = 44

/**
 * The JSON pointer of the first value of `value` nested more than `max` levels deep, or
 * undefined. Without recursion: it is there to find what recursion would not take.
 */
export function nestedPast(value: unknown, max: number): string | undefined {
  const stack: Array<{ value: unknown; depth: number; path: string }> = [{ value, depth: 0, path: '' }]
  for (let item = stack.pop(); item !== undefined; item = stack.pop()) {
    if (typeof item.value !== 'object' || item.value === null) continue
    if (item.depth >= max) return item.path === '' ? '/' : item.path
    for (const [key, child] of Object.entries(item.value)) {
      stack.push({ value: child, depth: item.depth + 1, path: `${item.path}/${key.replaceAll('~', '~0').replaceAll('/', '~1')}` })
    }
  }
  return undefined
}
