import { notSetReason } from '@worklease/test-servers'
import { defineConfig } from 'vitest/config'

// Every DynamoDB the suites run on, each a vitest project over all the test files: dynalite in
// process, and DynamoDB Local 3.3.1 from scripts/servers.sh (DYNAMODB_LOCAL_ENDPOINT). With
// DYNAMODB_ENDPOINT set, that endpoint alone (AWS, or a DynamoDB Local of your own).
const targets = process.env.DYNAMODB_ENDPOINT ? ['endpoint'] : ['dynalite', 'dynamodb-local']
const runnable = targets.filter((name) => {
  if (name !== 'dynamodb-local' || process.env.DYNAMODB_LOCAL_ENDPOINT) return true
  console.warn(
    `[worklease dynamodb] skipping target dynamodb-local: ${notSetReason('DYNAMODB_LOCAL_ENDPOINT')}`,
  )
  return false
})

export default defineConfig({
  test: {
    // CI's summary of which server judged which test (scripts/judged-reporter.mjs).
    reporters: [
      'default',
      ...(process.env.WORKLEASE_TEST_REPORTS ? ['../../scripts/judged-reporter.mjs'] : []),
    ],
    include: ['test/**/*.test.ts'],
    // The machine is shared: at most two workers across the projects.
    maxWorkers: 2,
    // A limit on hangs, not a speed test: a 400 KB item through LevelDB took over 5 s on a loaded
    // machine (benchmarks measure speed). The same limits as the other drivers' suites.
    testTimeout: 30_000,
    hookTimeout: 30_000,
    // The global setup reads the project's name to pick its server; dynalite runs in the main process
    // and serves every worker.
    projects: runnable.map((name) => ({
      extends: true,
      test: { name, globalSetup: ['test/global-setup.ts'] },
    })),
  },
})
