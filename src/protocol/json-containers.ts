// Counts the objects and arrays of a JSON text before anyone parses it. A line on a pack
// process's channel is bounded in characters (channel-limits.ts), but 15 MiB of `{},` is five
// million objects: the spawner parsed such a line and V8-serialized it, the front deserialized
// it, each for seconds on its one thread and ~1 GB (stop 29). No message the host's own code
// sends holds more than a few per item, so a text with more than the bound is pack code's.

/** Whether `text` holds more than `max` objects and arrays, strings left out; it stops counting there. */
export function containersPast(text: string, max: number): boolean {
  let count = 0
  let inString = false
  for (let i = 0; i < text.length; i++) {
    const c = text.charCodeAt(i)
    if (inString) {
      if (c === BACKSLASH) i++
      else if (c === QUOTE) inString = false
    } else if (c === QUOTE) inString = true
    else if ((c === OPEN_OBJECT || c === OPEN_ARRAY) && ++count > max) return true
  }
  return false
}

const BACKSLASH = 92
const QUOTE = 34
const OPEN_OBJECT = 123
const OPEN_ARRAY = 91
