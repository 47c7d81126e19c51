import { MemoryBackend, MemoryStore } from '@worklease/memory'
import { type BackendFactory, RoundTripFailer } from '../src/index.js'

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

/**
 * `BackendHarness.failNextCall` for a MemoryStore: every operation of a MemoryBackend counts itself
 * in `store.operations` before it reads or writes a lease, so the next count throws instead, as a
 * store's client throws for a broken connection.
 */
export function memoryFailNextCall(store: MemoryStore): (skipRoundTrips?: number) => void {
  let operations = store.operations
  const failer = new RoundTripFailer()
  Object.defineProperty(store, 'operations', {
    configurable: true,
    enumerable: true,
    get: () => operations,
    set: (value: number) => {
      if (failer.take()) {
        throw Object.assign(new Error('connection reset (injected by the harness)'), { code: 'ECONNRESET' })
      }
      operations = value
    },
  })
  return (skipRoundTrips) => failer.failNextCall(skipRoundTrips)
}

export const memoryFactory: BackendFactory = () => {
  const store = new MemoryStore()
  return {
    open: ({ clock }) => new MemoryBackend({ store, clock }),
    roundTrips: () => store.operations,
    seedToken: memorySeedToken(store),
    failNextCall: memoryFailNextCall(store),
    close: async () => {},
  }
}
