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
 * - `'released'`, `'abandoned'`: you ended it with `release()` or `abandon()`; `signal` still aborts
 *   with this reason so work attached to it stops, but it is not a loss.
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

/** What {@link LeaseLostError} is built from. */
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

/**
 * The reason a lease's `signal` aborts with, and what `checkpoint`, `readCheckpoint` and `run` reject
 * with once the lease is no longer held. `code` is always `'LEASE_LOST'`; `reason` says why.
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
export class LeaseLostError extends Error {
  readonly code = 'LEASE_LOST' as const
  readonly reason: LeaseEndReason
  readonly workId: string
  readonly fencingToken: bigint
  /** The callback's own error, when `run`'s callback threw after the lease was lost. */
  readonly callbackError?: unknown

  constructor(reason: LeaseEndReason, options: LeaseLostErrorOptions) {
    super(
      `lease on ${JSON.stringify(options.workId)} (token ${options.fencingToken}) ${MESSAGES[reason]}`,
      options.cause === undefined ? undefined : { cause: options.cause },
    )
    this.name = 'LeaseLostError'
    this.reason = reason
    this.workId = options.workId
    this.fencingToken = options.fencingToken
    if ('callbackError' in options) this.callbackError = options.callbackError
  }
}

/** `error` is a {@link LeaseLostError} from any copy of this package (checks `code`, not the class). */
export function isLeaseLostError(error: unknown): error is LeaseLostError {
  return typeof error === 'object' && error !== null && (error as { code?: unknown }).code === 'LEASE_LOST'
}
