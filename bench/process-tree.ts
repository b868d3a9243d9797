// A process and every process below it, read from /proc: what the bench sums a server's CPU and
// memory over (pack code runs in processes below the front), and what the walls tests search
// for the processes that run pack code.
import { readdirSync, readFileSync } from 'node:fs'

/** The parent of `pid`, or undefined once it is gone. */
function parentOf(pid: number): number | undefined {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, 'latin1')
    // The command name (field 2) may hold spaces and parentheses: the parent is the second field after its last ')'.
    return Number(stat.slice(stat.lastIndexOf(')') + 2).split(' ')[1])
  } catch {
    return undefined
  }
}

/** `root` and all its descendants, root first; empty once `root` is gone. */
export function processTree(root: number): number[] {
  const children = new Map<number, number[]>()
  for (const name of readdirSync('/proc')) {
    if (!/^\d+$/.test(name)) continue
    const parent = parentOf(Number(name))
    if (parent !== undefined) children.set(parent, [...(children.get(parent) ?? []), Number(name)])
  }
  if (parentOf(root) === undefined) return []
  const tree = [root]
  for (let i = 0; i < tree.length; i++) tree.push(...(children.get(tree[i] as number) ?? []))
  return tree
}
