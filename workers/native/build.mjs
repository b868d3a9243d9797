// Builds landlock-exec (landlock-exec.c) into dist/workers/native/ with the machine's C
// compiler, as part of `npm run build`. Where there is no compiler, or the system is not Linux,
// it says so and builds nothing: the host then starts pack processes without the Landlock
// wall, and says that in its `listening` line. A compiler that fails on the file is an error.
import { execFileSync, spawnSync } from 'node:child_process'
import { mkdirSync } from 'node:fs'
import { dirname, join } from 'node:path'
import { fileURLToPath } from 'node:url'

const here = dirname(fileURLToPath(import.meta.url))
const source = join(here, 'landlock-exec.c')
const out = join(here, '..', '..', 'dist', 'workers', 'native', 'landlock-exec')
const cc = process.env.CC ?? 'cc'

if (process.platform !== 'linux') {
  console.log(`landlock-exec not built: Landlock is Linux's, this is ${process.platform}`)
  process.exit(0)
}
if (spawnSync(cc, ['--version'], { stdio: 'ignore' }).error !== undefined) {
  console.log(`landlock-exec not built: no C compiler (${cc}); pack processes will run without the Landlock wall (README, "Security")`)
  process.exit(0)
}
mkdirSync(dirname(out), { recursive: true })
// Static: it starts before every strict call's process, and a static binary skips the dynamic loader.
const flags = ['-O2', '-Wall', '-Wextra', '-Werror', '-o', out, source]
if (spawnSync(cc, ['-static', ...flags], { stdio: 'ignore' }).status !== 0) execFileSync(cc, flags, { stdio: 'inherit' })
