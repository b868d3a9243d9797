import { configDefaults, defineConfig } from 'vitest/config'

export default defineConfig({
  test: {
    include: ['test/**/*.test.ts'],
    // test/container/ needs a container engine: `npm run test:container` (vitest.container.config.ts).
    exclude: [...configDefaults.exclude, 'test/container/**'],
    testTimeout: 30_000,
    hookTimeout: 30_000,
    // End-to-end files each spawn their own hosts; two at a time keeps a 2-core machine honest.
    // A third leaves threads waiting for a core, which a warm call's busy time (cpuMs) counts:
    // running.test.ts's 150 ms burn under cpuMs 300 then failed.
    maxWorkers: 2,
  },
})
