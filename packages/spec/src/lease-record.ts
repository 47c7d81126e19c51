/**
 * Proof of holding a lease, returned by {@link Backend.acquire} and passed back to every other call.
 *
 * Treat it as read-only and opaque: the backend checks `workId`, `holderId` and `fencingToken`
 * against what it stores, so a record that was edited by hand is rejected (`FENCED`) or refused as
 * malformed (`INVALID_ARGUMENT`).
 *
 * ```ts
 * const record = await backend.acquire('invoice-42', 'worker-a', 30_000)
 * await downstream.write({ token: record.fencingToken, ... })
 * ```
 */
export interface LeaseRecord {
  /** The unit of work this lease covers. */
  readonly workId: string
  /** Who holds it: unique per process (and per runner instance) so two holders never share one. */
  readonly holderId: string
  /**
   * Strictly increases with every new holder of `workId`, forever. Pass it to the protected
   * resource so it can reject writes from a stale holder. Always `>= 1n` and exact (never a float).
   */
  readonly fencingToken: bigint
  /**
   * When the lease expires if not renewed, on the backend's clock, as of the acquire. The record is
   * frozen but a Date can be changed in place, so a backend never trusts this one: it reads the
   * expiry the record was made with through `recordExpiresAtMs`.
   */
  readonly expiresAt: Date
}
