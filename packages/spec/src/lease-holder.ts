/**
 * The lease that made an acquire fail with `LEASE_HELD`, as the store reported it in the same round
 * trip. Carried by `LeaseHeldError.holder` on backends whose `capabilities.reportsHolder` is true.
 *
 * ```ts
 * const waitMs = error.holder ? error.holder.expiresInMs : backoff()
 * ```
 */
export interface LeaseHolder {
  /** Who holds the lease. */
  readonly holderId: string
  /** The holder's fencing token. */
  readonly fencingToken: bigint
  /** When the lease expires unless renewed, on the backend's clock. */
  readonly expiresAt: Date
  /**
   * Milliseconds from the store's "now" to `expiresAt`, measured on the backend's clock in the same
   * round trip (never negative). Unlike `expiresAt` it needs no clock in common with the caller:
   * a waiter sleeps this long (plus a little) and tries again. 0 when the lease refused the acquire
   * but had expired or been released by the time the driver read it: try again at once.
   */
  readonly expiresInMs: number
}
