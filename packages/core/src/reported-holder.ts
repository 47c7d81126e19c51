import type { LeaseHeldError, LeaseHolder } from '@worklease/spec'

/** The holder a `LEASE_HELD` named, each field read once; checked by whoever uses it. */
export interface ReportedHolder {
  /** The object the backend reported, for an error that passes it on. */
  readonly holder: LeaseHolder
  readonly holderId: unknown
  readonly fencingToken: unknown
  readonly expiresInMs: unknown
  /** `expiresAt` in epoch ms; NaN where it is no real Date. */
  readonly expiresAtMs: number
}

/**
 * Reads the holder of a `LEASE_HELD` once, guarded. A backend is user code: a `holder` (or a field of
 * it) whose getter throws would, read in a late reply's handler that nobody awaits, be an unhandled
 * rejection, and read in a waiting acquire end the wait with that throw instead of the lease outcome.
 * A holder that cannot be read tells no more than a backend that reports none: `undefined`.
 */
export function reportedHolder(error: LeaseHeldError): ReportedHolder | undefined {
  try {
    const holder = error.holder
    if (typeof holder !== 'object' || holder === null) return undefined
    const { holderId, fencingToken, expiresInMs, expiresAt } = holder
    return { holder, holderId, fencingToken, expiresInMs, expiresAtMs: epochMs(expiresAt) }
  } catch {
    return undefined
  }
}

function epochMs(value: unknown): number {
  try {
    return Date.prototype.getTime.call(value)
  } catch {
    // An object that only claims Date's prototype, or a Proxy of a Date.
    return Number.NaN
  }
}
