import { defineConfig } from 'vitest/config'

export default defineConfig({
  test: {
    // CI's summary of which server judged which test (scripts/judged-reporter.mjs).
    reporters: [
      'default',
      ...(process.env.WORKLEASE_TEST_REPORTS ? ['../../scripts/judged-reporter.mjs'] : []),
    ],
    include: ['test/**/*.test.ts'],
    // Starts FerretDB (building it on first use) unless MONGODB_URL points at a server.
    globalSetup: ['test/global-setup.ts'],
    // The files share one server on a 2-core machine; running them one at a time keeps timings sane.
    fileParallelism: false,
    testTimeout: 30_000,
    hookTimeout: 60_000,
  },
})
