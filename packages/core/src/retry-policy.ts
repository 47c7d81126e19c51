/**
 * Exponential backoff with full jitter for transient store errors and for waiting on a held lease:
 * the n-th delay (from 0) is a whole number of ms uniformly random in
 * `[0, min(maxDelayMs, initialDelayMs * multiplier ** n))`, and never less than 1 ms, so that no policy
 * polls without pause (with a bound of 1 ms, every delay is 1 ms).
 *
 * ```ts
 * const leaser = new Leaser({
 *   backend,
 *   ttlMs: 30_000,
 *   retry: { initialDelayMs: 100, maxDelayMs: 5_000, multiplier: 2, maxAttempts: 8 },
 * })
 * ```
 */
export interface RetryPolicy {
  /**
   * Upper bound of the first delay, from 1 ms (0 would bound nothing). Default: 50, or
   * `maxDelayMs` where that is smaller.
   *
   * ```ts
   * retry: { initialDelayMs: 100 }
   * ```
   */
  initialDelayMs?: number
  /**
   * Upper bound of any single delay, at least `initialDelayMs`. Default: 2000, or `initialDelayMs`
   * where that is larger.
   *
   * ```ts
   * retry: { maxDelayMs: 10_000 }
   * ```
   */
  maxDelayMs?: number
  /**
   * Growth factor of the bound between attempts. Default: 2.
   *
   * ```ts
   * retry: { multiplier: 1.5 }
   * ```
   */
  multiplier?: number
  /**
   * Consecutive transient store errors after which `acquire` gives up and rethrows the last one.
   * Renewals and releases are bounded by the lease's local deadline instead, checkpoints and reads by
   * `ttlMs - safetyMarginMs` from their first attempt (and the local deadline). Default: 5.
   *
   * ```ts
   * retry: { maxAttempts: 10 }
   * ```
   */
  maxAttempts?: number
}

/** @internal A {@link RetryPolicy} with every default filled in. */
export type ResolvedRetryPolicy = Required<RetryPolicy>

export const DEFAULT_RETRY: ResolvedRetryPolicy = Object.freeze({
  initialDelayMs: 50,
  maxDelayMs: 2_000,
  multiplier: 2,
  maxAttempts: 5,
})

/** @internal Full jitter: random in [0, cap), where cap grows exponentially and is bounded; from 1 ms. */
export function backoffDelay(policy: ResolvedRetryPolicy, attempt: number, random: () => number): number {
  const cap = Math.min(policy.maxDelayMs, policy.initialDelayMs * policy.multiplier ** Math.min(attempt, 64))
  // Floored, a bound under 2 ms made every delay 0: a waiter polled the store in a loop that, on
  // injected timers, never let time pass.
  return Math.max(1, Math.floor(random() * cap))
}
