import { defineConfig } from 'vitest/config'

export default defineConfig({
  test: {
    include: ['test/**/*.test.ts'],
    globalSetup: ['test/global-setup.ts'],
    // The machine is shared; dynalite runs in the main process and serves every worker.
    maxWorkers: 2,
    // A limit on hangs, not a speed test: a 400 KB item through LevelDB took over 5 s on a loaded
    // machine (benchmarks measure speed). The same limits as the other drivers' suites.
    testTimeout: 30_000,
    hookTimeout: 30_000,
  },
})
