/** One workId's stored lease, as every backend stores it. */
export interface StoredLease {
  fencingToken: bigint
  holderId: string
  expiresAtMs: number
  released: boolean
  cleanHandoff: boolean
  state: Uint8Array | null
  /** The largest checkpoint sequence stored for this token; 0 after acquire. */
  checkpointSequence: number
}

/**
 * The storage several {@link MemoryBackend}s can share, as processes share a database. Each backend
 * keeps its own clock, so tests can give two "processes" skewed clocks over one store.
 *
 * ```ts
 * const store = new MemoryStore()
 * const a = new MemoryBackend({ store })
 * const b = new MemoryBackend({ store, clock: { now: () => Date.now() - 5_000 } })
 * ```
 */
export class MemoryStore {
  readonly leases = new Map<string, StoredLease>()
  /** Operations that reached the store; stands in for round trips in the testkit's counting cases. */
  operations = 0
}
