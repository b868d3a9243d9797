// `npm run bench -- --profile`: runs the echo case at 32 callers against the host and the
// reference, each started with --cpu-prof, and summarizes their main threads' profiles
// (bench/profile.txt). The workers are not profiled: Piscina starts them without our flags.
import { mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { benchCases } from './cases.js'
import { loadSpec, startLoadGenerator } from './load.js'
import { BENCH_INDEX, HOST_BIN, REFERENCE_BIN, ROOT, startServer } from './proc.js'
import { renderProfile, summarizeProfile, type CpuProfile } from './profile.js'

export async function runProfile(options: { durationS: number }): Promise<void> {
  const echo = benchCases().find((c) => c.id === 'echo')!
  const gen = await startLoadGenerator()
  const sections: string[] = []
  try {
    for (const [name, bin] of [
      ['host', HOST_BIN],
      ['reference', REFERENCE_BIN],
    ] as const) {
      const dir = mkdtempSync(join(tmpdir(), `kindgi-bench-prof-${name}-`))
      try {
        const server = await startServer({ name, bin, index: BENCH_INDEX, nodeArgs: ['--cpu-prof', '--cpu-prof-dir', dir, '--cpu-prof-interval', '100'] })
        // Grow the pool first (as the bench does), then profile only the measured window.
        for (let i = 0; i < 4; i++) await gen.run(loadSpec(server.url, echo.body, 32, 0, 1))
        let fromUs = 0
        const load = await gen.run(loadSpec(server.url, echo.body, 32, 0.5, options.durationS), () => {
          fromUs = Number(process.hrtime.bigint() / 1000n)
        })
        const toUs = Number(process.hrtime.bigint() / 1000n)
        await server.stop()
        // The main thread's profile is the one whose thread id (before the sequence number) is 0.
        const file = readdirSync(dir).find((f) => /\.0\.\d+\.cpuprofile$/.test(f))
        if (file === undefined) throw new Error(`no main-thread profile in ${dir}: ${readdirSync(dir).join(', ')}`)
        const profile = JSON.parse(readFileSync(join(dir, file), 'utf8')) as CpuProfile
        const summary = summarizeProfile(profile, 25, { fromUs, toUs })
        sections.push(renderProfile(`${name}: echo, 32 callers, ${load.rps.toFixed(0)} calls/s`, summary, load.requests))
        process.stderr.write(`[bench] profiled ${name}: ${load.rps.toFixed(0)}/s\n`)
      } finally {
        rmSync(dir, { recursive: true, force: true })
      }
    }
  } finally {
    await gen.close()
  }
  const text = `${sections.join('\n\n')}\n`
  process.stdout.write(text)
  writeFileSync(`${ROOT}bench/profile.txt`, text)
}
