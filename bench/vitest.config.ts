import { defineConfig } from 'vitest/config'

export default defineConfig({
  // Unit tests of the harness (options, sampling): no servers, no timing. The bench itself is `pnpm bench`.
  test: { include: ['test/**/*.test.ts'] },
})
