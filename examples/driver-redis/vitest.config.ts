import { defineConfig } from 'vitest/config'

export default defineConfig({
  test: {
    include: ['test/**/*.test.ts'],
    // One Redis serves every worker; the machine is shared, so keep parallelism modest.
    maxWorkers: 2,
  },
})
