/**
 * Thrown by `acquire` and `run` on a {@link Leaser} that is closing or closed, including acquires that
 * were waiting when `close()` was called.
 *
 * ```ts
 * await leaser.close()
 * await leaser.acquire('job-7').catch(isLeaserClosedError) // true
 * ```
 */
export class LeaserClosedError extends Error {
  readonly code = 'LEASER_CLOSED' as const

  constructor(message = 'the Leaser is closed') {
    super(message)
    this.name = 'LeaserClosedError'
  }
}

/** `error` is a {@link LeaserClosedError} from any copy of this package. */
export function isLeaserClosedError(error: unknown): error is LeaserClosedError {
  return typeof error === 'object' && error !== null && (error as { code?: unknown }).code === 'LEASER_CLOSED'
}
