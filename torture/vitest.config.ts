import { defineConfig } from 'vitest/config'

export default defineConfig({
  test: {
    // CI's summary of which server judged which test (scripts/judged-reporter.mjs).
    reporters: ['default', ...(process.env.WORKLEASE_TEST_REPORTS ? ['../scripts/judged-reporter.mjs'] : [])],
    include: ['test/**/*.test.ts'],
    // The torture runs start servers and five worker processes each: one file at a time on a 2-core
    // machine shared with other test runs.
    fileParallelism: false,
    testTimeout: 240_000,
    hookTimeout: 120_000,
  },
})
