import { ErrorCode, isWorkleaseError, WorkleaseError } from '@worklease/spec'

/**
 * Thrown by `acquire` and `run` on a {@link Leaser} that is closing or closed, including acquires that
 * were waiting when `close()` was called. `code` is always `'LEASER_CLOSED'`.
 *
 * ```ts
 * await leaser.close()
 * await leaser.acquire('job-7').catch(isLeaserClosedError) // true
 * ```
 */
export class LeaserClosedError extends WorkleaseError {
  declare readonly code: typeof ErrorCode.LEASER_CLOSED

  constructor(message = 'the Leaser is closed') {
    super(ErrorCode.LEASER_CLOSED, message)
  }
}

/** `error` is a {@link LeaserClosedError} from any copy of this package. */
export const isLeaserClosedError = (error: unknown): error is LeaserClosedError =>
  isWorkleaseError(error, ErrorCode.LEASER_CLOSED)
