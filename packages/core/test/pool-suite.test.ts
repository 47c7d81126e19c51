import { MemoryBackend, MemoryStore } from '@worklease/memory'
import { describe, test } from 'vitest'
import { poolSuite } from '../src/testing/index.js'

poolSuite({
  name: 'memory',
  describe,
  test,
  factory: () => {
    const store = new MemoryStore()
    return { open: ({ clock }) => new MemoryBackend({ store, clock }), close: async () => {} }
  },
  ttlMs: 500,
})
