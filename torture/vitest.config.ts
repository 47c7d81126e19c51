import { defineConfig } from 'vitest/config'

export default defineConfig({
  test: {
    include: ['test/**/*.test.ts'],
    // The torture runs start servers and five worker processes each: one file at a time on a 2-core
    // machine shared with other test runs.
    fileParallelism: false,
    testTimeout: 240_000,
    hookTimeout: 120_000,
  },
})
