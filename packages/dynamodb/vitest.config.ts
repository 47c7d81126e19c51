import { defineConfig } from 'vitest/config'

export default defineConfig({
  test: {
    include: ['test/**/*.test.ts'],
    globalSetup: ['test/global-setup.ts'],
    // The machine is shared; dynalite runs in the main process and serves every worker.
    maxWorkers: 2,
  },
})
