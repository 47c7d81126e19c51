/**
 * What a backend can promise, as plain data. The testkit reads it to decide which cases apply and
 * prints the reason for every case it skips.
 *
 * ```ts
 * const capabilities: BackendCapabilities = {
 *   clock: 'server',
 *   maxStateBytes: 16 * 1024 * 1024,
 *   crossConnectionAtomic: true,
 *   reportsHolder: true,
 * }
 * ```
 */
export interface BackendCapabilities {
  /**
   * Whose clock decides expiry. `'server'`: the database server's (SQL backends), so client skew is
   * irrelevant. `'client'`: the calling process's clock (injectable), so hosts must keep clocks
   * roughly in sync and ttls must exceed the worst skew.
   */
  readonly clock: 'server' | 'client'
  /**
   * The largest checkpoint state, in bytes, that the backend accepts: a non-negative safe integer
   * (`@worklease/core` refuses a backend declaring anything else when a Leaser is made).
   */
  readonly maxStateBytes: number
  /**
   * Whether conditional single-row writes issued from separate connections are atomic with respect
   * to each other on this server. `false` declares the server unfit to judge cross-connection races
   * (for example a wire-compatible server that implements find-and-modify as a read then a write);
   * `crossConnectionAtomicNote` should say why.
   */
  readonly crossConnectionAtomic: boolean
  /** Why `crossConnectionAtomic` is false; printed by the testkit next to each skipped case. */
  readonly crossConnectionAtomicNote?: string
  /**
   * Whether `LeaseHeldError.holder` is filled: who holds the lease and how long until it expires, from
   * the same round trip (or, where the store cannot answer both at once, one more read on the
   * LEASE_HELD path only). Every LEASE_HELD carries it, also when that read finds the lease expired
   * or released since the store refused the acquire: it is still the lease that refused it, with
   * `expiresInMs: 0` (only a revoked lease, which names no holder, goes without). `@worklease/core`
   * then sleeps until the expiry instead of polling, and recognises a lease its own lost-reply
   * acquire took. Default: false.
   */
  readonly reportsHolder?: boolean
  /**
   * Whether `backend.acquireWithCheckpoint` exists: an acquire that returns the checkpoint it starts
   * from in the same round trip. `@worklease/core` then answers a lease's first `readCheckpoint` from
   * it. Default: false.
   */
  readonly acquireWithCheckpoint?: boolean
  /** Whether `backend.list` exists. Default: false. */
  readonly list?: boolean
  /** Whether `backend.revoke` exists. Default: false. */
  readonly revoke?: boolean
  /**
   * Present when `backend.renewMany` exists: `maxRecords` is the most records one call takes (a
   * statement's parameter limit, a request's size), so callers split larger sets into chunks of at
   * most that many. Absent: renew leases one by one (`@worklease/core` then renews them in parallel).
   *
   * ```ts
   * const { maxRecords } = backend.capabilities.renewMany ?? { maxRecords: 1 }
   * ```
   */
  readonly renewMany?: { readonly maxRecords: number }
}
