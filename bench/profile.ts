// Reads a V8 .cpuprofile (node --cpu-prof) and says where the time went: self time by
// category and by function, and inclusive time of the functions that matter. Pure.

export type CallFrame = { functionName: string; url: string; lineNumber: number; columnNumber: number }
export type ProfileNode = { id: number; callFrame: CallFrame; hitCount?: number; children?: number[] }
export type CpuProfile = { nodes: ProfileNode[]; startTime: number; endTime: number; samples: number[]; timeDeltas: number[] }

export type Slice = { name: string; us: number; share: number }
export type ProfileSummary = {
  totalUs: number
  busyUs: number
  /** Self time by category, as a share of busy (non-idle) time. */
  categories: Slice[]
  /** The functions with the most self time. */
  topSelf: Slice[]
  /** Inclusive time of functions outside node's internals (ours, Hono, Piscina, pino…). */
  topInclusive: Slice[]
}

const NATIVE_CATEGORY: Array<[RegExp, string]> = [
  [/^(parse|stringify)$/, 'JSON parse/stringify'],
  [/^(writev|writeUtf8String|writeBuffer|writeLatin1String|writeAsciiString|writeUcs2String|writeGeneric)$/, 'socket writes (kernel send)'],
  [/^(postMessage|drainMessagePort|receiveMessageOnPort)$/, 'worker messaging (postMessage)'],
  [/^(notify|wait|waitAsync)$/, 'Atomics'],
  [/^(execute|finish|consume|unconsume)$/, 'HTTP parser (llhttp)'],
  [/^(writeSync)$/, 'pino logging (fs.writeSync)'],
]

/** The category a frame's self time belongs to, from its script URL (or its name for natives). */
export function categorize(frame: CallFrame): string {
  const { url, functionName: name } = frame
  if (name === '(idle)') return 'idle'
  if (name === '(garbage collector)') return 'GC'
  if (name === '(program)') return 'V8/native, unattributed'
  if (url === '') {
    for (const [re, category] of NATIVE_CATEGORY) if (re.test(name)) return category
    return 'other native'
  }
  if (url.includes('/node_modules/@hono/node-server/')) return '@hono/node-server (Request/Response, headers)'
  if (url.includes('/node_modules/hono/')) return 'Hono (routing, Context)'
  if (url.includes('/node_modules/piscina/')) return 'Piscina'
  if (
    /\/node_modules\/(pino|sonic-boom|thread-stream|quick-format-unescaped|fast-redact|safe-stable-stringify|atomic-sleep|on-exit-leak-free|@pinojs)/.test(url)
  ) {
    return 'pino logging'
  }
  if (url.includes('/node_modules/ajv')) return 'Ajv'
  if (url.includes('/dist/src/')) return 'our front code (dist/src)'
  if (url.includes('/dist/bench/')) return 'reference code (dist/bench)'
  if (/^node:(_http_|http$|internal\/http)/.test(url)) return 'node:http (parse, headers, write)'
  if (/^node:(net|stream|internal\/(net|stream_base_commons|streams\/))/.test(url)) return 'net/streams'
  if (/^node:(worker_threads|internal\/worker|internal\/per_context\/messageport)/.test(url)) return 'worker messaging (postMessage)'
  if (/^node:(events|internal\/event_target|internal\/abort_controller)/.test(url)) return 'events/AbortController'
  if (/^node:internal\/(timers|process\/task_queues)/.test(url)) return 'timers/microtasks'
  if (url.startsWith('node:')) return 'other node internals'
  return 'other'
}

function label(frame: CallFrame): string {
  const file = frame.url === '' ? '(native)' : frame.url.replace(/^.*\/node_modules\//, '').replace(/^file:\/\/.*\/dist\//, 'dist/')
  return `${frame.functionName || '(anonymous)'} ${file}:${frame.lineNumber + 1}`
}

function slices(map: Map<string, number>, busyUs: number, top: number): Slice[] {
  return [...map.entries()]
    .map(([name, us]) => ({ name, us, share: busyUs > 0 ? us / busyUs : 0 }))
    .sort((a, b) => b.us - a.us)
    .slice(0, top)
}

/**
 * `window` (µs on the profile's clock, which is CLOCK_MONOTONIC like process.hrtime) keeps
 * only the samples taken inside it, e.g. the measured load and not the boot.
 */
export function summarizeProfile(profile: CpuProfile, top = 20, window?: { fromUs: number; toUs: number }): ProfileSummary {
  const byId = new Map<number, ProfileNode>()
  const parent = new Map<number, number>()
  for (const node of profile.nodes) {
    byId.set(node.id, node)
    for (const child of node.children ?? []) parent.set(child, node.id)
  }
  const self = new Map<number, number>()
  let at = profile.startTime
  for (let i = 0; i < profile.samples.length; i++) {
    const id = profile.samples[i] as number
    const delta = Math.max(0, profile.timeDeltas[i] ?? 0)
    at += delta
    if (window !== undefined && (at < window.fromUs || at > window.toUs)) continue
    // timeDeltas[i] is the time since the previous sample: charge it to this sample's frame.
    self.set(id, (self.get(id) ?? 0) + delta)
  }
  let totalUs = 0
  let idleUs = 0
  const categories = new Map<string, number>()
  const selfByFunction = new Map<string, number>()
  const inclusive = new Map<string, number>()
  for (const [id, us] of self) {
    const node = byId.get(id) as ProfileNode
    totalUs += us
    const category = categorize(node.callFrame)
    if (category === 'idle') {
      idleUs += us
      continue
    }
    categories.set(category, (categories.get(category) ?? 0) + us)
    const name = label(node.callFrame)
    selfByFunction.set(name, (selfByFunction.get(name) ?? 0) + us)
    // Every distinct function on this stack gets the time once, for inclusive totals.
    const seen = new Set<string>()
    for (let at: number | undefined = id; at !== undefined; at = parent.get(at)) {
      const frame = (byId.get(at) as ProfileNode).callFrame
      if (frame.url === '' || frame.url.startsWith('node:')) continue
      const key = label(frame)
      if (seen.has(key)) continue
      seen.add(key)
      inclusive.set(key, (inclusive.get(key) ?? 0) + us)
    }
  }
  const busyUs = totalUs - idleUs
  return {
    totalUs,
    busyUs,
    categories: slices(categories, busyUs, 100),
    topSelf: slices(selfByFunction, busyUs, top),
    topInclusive: slices(inclusive, busyUs, top),
  }
}

export function renderProfile(title: string, s: ProfileSummary, requests: number): string {
  const pct = (x: number) => `${(x * 100).toFixed(1)} %`.padStart(7)
  const perCall = requests > 0 ? ` = ${(s.busyUs / requests).toFixed(1)} µs of main-thread CPU per call (${requests} calls)` : ''
  return [
    `## ${title}`,
    `main thread busy ${(s.busyUs / 1000).toFixed(0)} ms of ${(s.totalUs / 1000).toFixed(0)} ms profiled${perCall}`,
    '',
    'self time by category (share of busy time):',
    ...s.categories.map((c) => `  ${pct(c.share)}  ${c.name}`),
    '',
    'top self time:',
    ...s.topSelf.map((c) => `  ${pct(c.share)}  ${c.name}`),
    '',
    'top inclusive (outside node internals):',
    ...s.topInclusive.map((c) => `  ${pct(c.share)}  ${c.name}`),
  ].join('\n')
}
