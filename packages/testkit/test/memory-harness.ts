import { MemoryBackend, MemoryStore } from '@worklease/memory'
import type { BackendFactory } from '../src/index.js'

export const memoryFactory: BackendFactory = () => {
  const store = new MemoryStore()
  return {
    open: ({ clock }) => new MemoryBackend({ store, clock }),
    roundTrips: () => store.operations,
    close: async () => {},
  }
}
