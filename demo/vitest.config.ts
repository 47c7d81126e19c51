import { defineConfig } from 'vitest/config'

export default defineConfig({
  test: {
    include: ['test/**/*.test.ts'],
    // Each case runs the whole demo (several processes); one at a time on a 2-core machine.
    fileParallelism: false,
    testTimeout: 180_000,
  },
})
