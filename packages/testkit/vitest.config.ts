import { defineConfig } from 'vitest/config'

export default defineConfig({
  test: {
    include: ['test/**/*.test.ts'],
    // A limit on hangs, not on speed: the machine is shared, and a loaded one is slow.
    testTimeout: 30_000,
  },
})
