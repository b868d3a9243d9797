// Counts the values of a JSON text before anyone parses it. A line on a pack process's channel
// is bounded in characters (channel-limits.ts), but 15 MiB of `{},` is five million objects,
// and 15 MiB of `"k1":0,` one object of 1.6 million keys: the spawner parsed such a line and
// V8-serialized it, the front deserialized it, each for seconds on its one thread and up to
// ~1 GB (stop 29, two red-team passes). The host's own messages carry what pack code says
// inside strings, and hold a handful of values an item outside them; so a text with more than
// the bound outside its strings is pack code's.

/**
 * Whether `text` holds more than `max` of what parsing it makes outside strings: objects and
 * arrays (`{`, `[`), members (`:`) and elements (`,`). It stops counting there.
 */
export function valuesPast(text: string, max: number): boolean {
  let count = 0
  let inString = false
  for (let i = 0; i < text.length; i++) {
    const c = text.charCodeAt(i)
    if (inString) {
      if (c === BACKSLASH) i++
      else if (c === QUOTE) inString = false
    } else if (c === QUOTE) inString = true
    else if ((c === OPEN_OBJECT || c === OPEN_ARRAY || c === COLON || c === COMMA) && ++count > max) return true
  }
  return false
}

const BACKSLASH = 92
const QUOTE = 34
const OPEN_OBJECT = 123
const OPEN_ARRAY = 91
const COLON = 58
const COMMA = 44
