import type { LeaseHolder } from './lease-holder.js'

/**
 * Stable error codes of every error worklease throws, backends and runner alike. They never change
 * between major versions; match on them, not on messages or classes (two installed copies of this
 * package have two distinct classes but the same codes).
 *
 * The last three are `@worklease/core`'s: `LEASE_LOST` (a held lease was taken away: fenced, expired,
 * past its local deadline, or ended by `leaser.close()`), `LEASE_ENDED` (you ended it yourself with
 * `release()` or `abandon()`: what `lease.signal` aborts with then, not a loss) and `LEASER_CLOSED`.
 */
export const ErrorCode = Object.freeze({
  LEASE_HELD: 'LEASE_HELD',
  FENCED: 'FENCED',
  LEASE_EXPIRED: 'LEASE_EXPIRED',
  INVALID_ARGUMENT: 'INVALID_ARGUMENT',
  TOKENS_EXHAUSTED: 'TOKENS_EXHAUSTED',
  LEASE_LOST: 'LEASE_LOST',
  LEASE_ENDED: 'LEASE_ENDED',
  LEASER_CLOSED: 'LEASER_CLOSED',
} as const)

export type ErrorCode = (typeof ErrorCode)[keyof typeof ErrorCode]

const CODES: ReadonlySet<string> = new Set(Object.values(ErrorCode))

/**
 * Base class of every lease outcome this library throws. Failures of the store itself (network,
 * permissions, a missing table) are not lease outcomes: they propagate as the client threw them.
 *
 * ```ts
 * try {
 *   await backend.acquire('job-7', 'worker-a', 30_000)
 * } catch (error) {
 *   if (isWorkleaseError(error, 'LEASE_HELD')) return // someone else is on it
 *   throw error
 * }
 * ```
 */
export class WorkleaseError extends Error {
  readonly code: ErrorCode

  constructor(code: ErrorCode, message: string, options?: ErrorOptions) {
    super(message, options)
    this.code = code
    this.name = new.target.name
  }
}

/** Options of {@link LeaseHeldError}: the usual `cause`, and the current lease when the store said. */
export interface LeaseHeldErrorOptions extends ErrorOptions {
  /** The lease that is in the way, as the store reported it in the same round trip. */
  holder?: LeaseHolder
}

/**
 * The lease is held by someone else (or by the same holderId: leases are not reentrant).
 *
 * `holder`, when the backend fills it (`capabilities.reportsHolder`), says who holds it and when it
 * expires on the store's clock, so a waiter can sleep until then instead of polling blindly, and a
 * caller whose earlier acquire had an unknown outcome can recognise its own lease:
 *
 * ```ts
 * try {
 *   await backend.acquire('job-7', 'worker-a', 30_000)
 * } catch (error) {
 *   if (!isLeaseHeldError(error)) throw error
 *   if (error.holder?.holderId === 'worker-a') console.log('an earlier attempt took it after all')
 *   else await sleep(error.holder?.expiresInMs ?? 1_000)
 * }
 * ```
 */
export class LeaseHeldError extends WorkleaseError {
  // `declare`: no own property at all unless the store reported a holder.
  declare readonly holder?: LeaseHolder

  constructor(message = 'the lease is held', options?: LeaseHeldErrorOptions) {
    const { holder, ...errorOptions } = options ?? {}
    super(ErrorCode.LEASE_HELD, message, errorOptions)
    if (holder !== undefined) Object.defineProperty(this, 'holder', { value: holder, enumerable: true })
  }
}

/**
 * The record is no longer valid: the lease was taken over by a newer token, or released. The holder
 * must stop working on the unit; anything it writes downstream will be rejected by the fence.
 */
export class FencedError extends WorkleaseError {
  constructor(message = 'the lease record is no longer valid', options?: ErrorOptions) {
    super(ErrorCode.FENCED, message, options)
  }
}

/** The record is still the latest but its lease expired; renew refuses, checkpoint may still land. */
export class LeaseExpiredError extends WorkleaseError {
  constructor(message = 'the lease expired', options?: ErrorOptions) {
    super(ErrorCode.LEASE_EXPIRED, message, options)
  }
}

/** Input that no backend could accept; thrown before any round trip, so nothing changed. */
export class InvalidArgumentError extends WorkleaseError {
  constructor(message: string, options?: ErrorOptions) {
    super(ErrorCode.INVALID_ARGUMENT, message, options)
  }
}

/**
 * The workId's fencing tokens reached `MAX_FENCING_TOKEN` (2^63 - 1): no store can keep a larger one,
 * so the workId can never be acquired again. Thrown by `acquire` of a free lease at the ceiling, the
 * same on every backend, checked by the store in the same write that would have taken the lease.
 * Use another workId; a workId that takes a new holder every millisecond reaches it in 292 million
 * years, so in practice only a hand-edited store or a seeded test gets here.
 */
export class TokensExhaustedError extends WorkleaseError {
  constructor(message = 'the fencing tokens of this workId are exhausted', options?: ErrorOptions) {
    super(ErrorCode.TOKENS_EXHAUSTED, message, options)
  }
}

/**
 * Whether `error` is a worklease error (optionally with the given code). Checks the `code` property,
 * so it works across duplicate installs where `instanceof` does not.
 */
export function isWorkleaseError(error: unknown, code?: ErrorCode): error is WorkleaseError {
  if (typeof error !== 'object' || error === null) return false
  let actual: unknown
  try {
    actual = (error as { code?: unknown }).code
  } catch {
    // A revoked Proxy, a throwing getter: no worklease error, and the caller's error is left as it was.
    return false
  }
  if (typeof actual !== 'string' || !CODES.has(actual)) return false
  return code === undefined || actual === code
}

/** `error` is a {@link LeaseHeldError} from any copy of this package. */
export const isLeaseHeldError = (error: unknown): error is LeaseHeldError =>
  isWorkleaseError(error, ErrorCode.LEASE_HELD)

/** `error` is a {@link FencedError} from any copy of this package. */
export const isFencedError = (error: unknown): error is FencedError =>
  isWorkleaseError(error, ErrorCode.FENCED)

/** `error` is a {@link LeaseExpiredError} from any copy of this package. */
export const isLeaseExpiredError = (error: unknown): error is LeaseExpiredError =>
  isWorkleaseError(error, ErrorCode.LEASE_EXPIRED)

/** `error` is an {@link InvalidArgumentError} from any copy of this package. */
export const isInvalidArgumentError = (error: unknown): error is InvalidArgumentError =>
  isWorkleaseError(error, ErrorCode.INVALID_ARGUMENT)

/** `error` is a {@link TokensExhaustedError} from any copy of this package. */
export const isTokensExhaustedError = (error: unknown): error is TokensExhaustedError =>
  isWorkleaseError(error, ErrorCode.TOKENS_EXHAUSTED)
