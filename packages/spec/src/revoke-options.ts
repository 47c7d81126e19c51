import type { CallOptions } from './call-options.js'

/** Options of {@link Backend.revoke}. */
export interface RevokeOptions extends CallOptions {
  /**
   * The token of the tenure to end: the lease is revoked only if it is live and its stored token
   * equals this one. A lease taken over since (a later token), or released, expired or never taken,
   * is left as it is and `revoke` returns `false`. The comparison is part of the store's one
   * conditional write, so no takeover can land between the check and the revoke. Without it,
   * `revoke` ends whoever holds the lease when the write lands.
   *
   * A bigint in `1n..MAX_FENCING_TOKEN`, read once (`validateRevokeArgs`); anything else is
   * `InvalidArgumentError` before any round trip.
   *
   * ```ts
   * const { leases } = await backend.list!({ prefix: 'invoice-42', limit: 1 })
   * const lease = leases.find((l) => l.workId === 'invoice-42' && !l.free)
   * // Ends the tenure the operator saw, never a holder that took over since.
   * if (lease && (await backend.revoke!('invoice-42', { fencingToken: lease.fencingToken }))) {
   *   console.log(`revoked ${lease.holderId}'s lease (token ${lease.fencingToken})`)
   * }
   * ```
   */
  readonly fencingToken?: bigint
}
