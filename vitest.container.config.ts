// `npm run test:container`: the image, compose and the scaling rehearsal on a real container
// engine (test/container/). The global setup starts the engine where it can and builds the
// image once; one file at a time, so the rehearsal's timings are not shared with a build.
import { defineConfig } from 'vitest/config'

export default defineConfig({
  test: {
    include: ['test/container/**/*.test.ts'],
    globalSetup: ['test/container/setup.ts'],
    // Every wait inside a test is bounded on its own; these only catch a hang.
    testTimeout: 120_000,
    hookTimeout: 240_000,
    maxWorkers: 1,
    fileParallelism: false,
  },
})
