import { LeaseHeldError } from './errors.js'

/** What a driver read of the lease that refused an acquire, for {@link leaseHeldBy}. */
export interface RefusingLease {
  /** The holderId stored on the lease: empty once the lease was revoked. */
  readonly holderId: string
  readonly fencingToken: bigint
  readonly expiresAtMs: number
  /** From the backend's "now" to the expiry; negative once the lease expired or was released. */
  readonly expiresInMs: number
}

/**
 * The `LEASE_HELD` for an acquire the store refused, naming the lease that refused it. A lease that
 * expired or was released by the time the driver read it is still that lease, reported as expiring
 * in 0 ms, so a waiter tries again at once instead of backing off blindly. A revoked lease (empty
 * holderId) names nobody, and an expiry that is not a number says nothing: those get no `holder`.
 *
 * ```ts
 * throw leaseHeldBy({ holderId, fencingToken, expiresAtMs, expiresInMs: expiresAtMs - clock.now() }, error)
 * ```
 */
export function leaseHeldBy(lease: RefusingLease, cause?: unknown): LeaseHeldError {
  const { holderId, fencingToken, expiresAtMs, expiresInMs } = lease
  const causeOption = cause === undefined ? {} : { cause }
  if (holderId === '' || !Number.isFinite(expiresAtMs) || !Number.isFinite(expiresInMs)) {
    return new LeaseHeldError(undefined, causeOption)
  }
  return new LeaseHeldError(undefined, {
    ...causeOption,
    holder: {
      holderId,
      fencingToken,
      expiresAt: new Date(expiresAtMs),
      expiresInMs: Math.max(0, expiresInMs),
    },
  })
}
