import { defineConfig } from 'vitest/config'

export default defineConfig({
  test: {
    // CI's summary of which server judged which test (scripts/judged-reporter.mjs).
    reporters: [
      'default',
      ...(process.env.WORKLEASE_TEST_REPORTS ? ['../../scripts/judged-reporter.mjs'] : []),
    ],
    include: ['test/**/*.test.ts'],
    // Two cores, shared with other test runs: one file per worker, at most two at once.
    maxWorkers: 2,
    testTimeout: 30_000,
    hookTimeout: 30_000,
  },
})
