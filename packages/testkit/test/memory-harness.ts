import { MemoryBackend, MemoryStore } from '@worklease/memory'
import type { BackendFactory } from '../src/index.js'

/** Stores a released lease at `fencingToken`, as `BackendHarness.seedToken` asks. */
export const memorySeedToken =
  (store: MemoryStore) =>
  async (workId: string, fencingToken: bigint): Promise<void> => {
    store.leases.set(workId, {
      fencingToken,
      holderId: 'seeded',
      expiresAtMs: 0,
      released: true,
      cleanHandoff: true,
      state: null,
      checkpointSequence: 0,
    })
  }

export const memoryFactory: BackendFactory = () => {
  const store = new MemoryStore()
  return {
    open: ({ clock }) => new MemoryBackend({ store, clock }),
    roundTrips: () => store.operations,
    seedToken: memorySeedToken(store),
    close: async () => {},
  }
}
