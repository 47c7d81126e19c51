import { ErrorCode, isWorkleaseError, WorkleaseError } from '@worklease/spec'

/**
 * Why a {@link Lease} stopped being held.
 * - `'fenced'`: the backend said `FENCED`: someone else took the lease over (or it was released
 *   behind our back). Work done since the last successful renew may have overlapped a successor.
 * - `'expired'`: the backend said `LEASE_EXPIRED`: nobody took it yet, but it lapsed; it is not
 *   re-acquired behind your back.
 * - `'deadline'`: the local deadline (start of the last successful renew + ttl - safety margin, on
 *   the monotonic or the wall clock, whichever runs out first) passed without a successful renew: the
 *   store was unreachable, or the process was paused or the host suspended. Declared before the
 *   backend could let a successor in.
 * - `'rejected'`: the backend refused the renew with another worklease error (a bug, not a race).
 * - `'closed'`: `leaser.close()` released it.
 * - `'released'`, `'abandoned'`: you ended it with `release()` or `abandon()`; `signal` aborts with a
 *   {@link LeaseEndedError} then, so work attached to it stops, but it is not a loss.
 */
export type LeaseEndReason =
  | 'fenced'
  | 'expired'
  | 'deadline'
  | 'rejected'
  | 'closed'
  | 'released'
  | 'abandoned'

/** The {@link LeaseEndReason}s that mean the lease was taken away while the holder still wanted it. */
export type LeaseLossReason = Exclude<LeaseEndReason, 'released' | 'abandoned'>

/** What {@link LeaseLostError} and {@link LeaseEndedError} are built from. */
export interface LeaseLostErrorOptions {
  readonly workId: string
  readonly fencingToken: bigint
  /** The store's error behind the loss: `FencedError`, `LeaseExpiredError`, or the last transient error. */
  readonly cause?: unknown
  /** Set by `leaser.run` when the callback threw after (or because) the lease was lost. */
  readonly callbackError?: unknown
}

const MESSAGES: Record<LeaseEndReason, string> = {
  fenced: 'was taken over (FENCED)',
  expired: 'expired before it could be renewed (LEASE_EXPIRED)',
  deadline: 'could not be renewed before its local deadline',
  rejected: 'was refused by the backend',
  closed: 'was released by leaser.close()',
  released: 'was released',
  abandoned: 'was abandoned and left to expire',
}

const describeLease = (reason: LeaseEndReason, options: LeaseLostErrorOptions) =>
  `lease on ${JSON.stringify(options.workId)} (token ${options.fencingToken}) ${MESSAGES[reason]}`

/**
 * The reason a lease's `signal` aborts with when the lease was taken away, and what `checkpoint`,
 * `readCheckpoint` and `run` reject with then. `code` is always `'LEASE_LOST'`; `reason` says why.
 *
 * ```ts
 * try {
 *   await leaser.run('job-7', work)
 * } catch (error) {
 *   if (isLeaseLostError(error)) console.warn(`lost job-7 (${error.reason})`, error.callbackError)
 *   else throw error // the callback's own error, unchanged
 * }
 * ```
 */
export class LeaseLostError extends WorkleaseError {
  declare readonly code: typeof ErrorCode.LEASE_LOST
  readonly reason: LeaseLossReason
  readonly workId: string
  readonly fencingToken: bigint
  /** The callback's own error, when `run`'s callback threw after the lease was lost. */
  declare readonly callbackError?: unknown

  constructor(reason: LeaseLossReason, options: LeaseLostErrorOptions) {
    super(
      ErrorCode.LEASE_LOST,
      describeLease(reason, options),
      options.cause === undefined ? undefined : { cause: options.cause },
    )
    this.reason = reason
    this.workId = options.workId
    this.fencingToken = options.fencingToken
    if ('callbackError' in options) {
      Object.defineProperty(this, 'callbackError', { value: options.callbackError, enumerable: true })
    }
  }
}

/**
 * What a lease's `signal` aborts with, and later calls reject with, after you ended the lease yourself
 * with `release()` or `abandon()`: the work attached to the signal stops, but nothing was lost.
 * `code` is always `'LEASE_ENDED'`.
 *
 * ```ts
 * lease.signal.addEventListener('abort', () => {
 *   if (!isLeaseEndedError(lease.signal.reason)) alert(`lost ${lease.workId}`)
 * })
 * ```
 */
export class LeaseEndedError extends WorkleaseError {
  declare readonly code: typeof ErrorCode.LEASE_ENDED
  readonly reason: 'released' | 'abandoned'
  readonly workId: string
  readonly fencingToken: bigint

  constructor(reason: 'released' | 'abandoned', options: LeaseLostErrorOptions) {
    super(ErrorCode.LEASE_ENDED, describeLease(reason, options))
    this.reason = reason
    this.workId = options.workId
    this.fencingToken = options.fencingToken
  }
}

/** `error` is a {@link LeaseLostError} from any copy of this package (checks `code`, not the class). */
export const isLeaseLostError = (error: unknown): error is LeaseLostError =>
  isWorkleaseError(error, ErrorCode.LEASE_LOST)

/** `error` is a {@link LeaseEndedError} from any copy of this package. */
export const isLeaseEndedError = (error: unknown): error is LeaseEndedError =>
  isWorkleaseError(error, ErrorCode.LEASE_ENDED)
