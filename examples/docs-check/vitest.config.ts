import { defineConfig } from 'vitest/config'

export default defineConfig({
  test: {
    include: ['test/**/*.test.ts'],
    // Building the TypeScript program for every sample at once takes a few seconds.
    testTimeout: 60_000,
  },
})
