// `npm run soak`: the reliability suite at length (test/reliability/*.soak.ts), one file at a
// time, bounded by KINDGI_SOAK_SECONDS (default 300) plus the fixed settle and drain phases.
import { defineConfig } from 'vitest/config'

const seconds = Number(process.env.KINDGI_SOAK_SECONDS ?? 300)

export default defineConfig({
  test: {
    include: ['test/reliability/**/*.soak.ts'],
    // Each phase stops itself within its share of the budget; this only catches a hang.
    testTimeout: (seconds + 180) * 1000,
    hookTimeout: 60_000,
    maxWorkers: 1,
    fileParallelism: false,
  },
})
