import type { Instant, Timers } from './timers.js'

/**
 * @internal When a lease stops being ours as far as this process can tell: the start of the last
 * successful acquire, renew or checkpoint + `ttl - safetyMargin`, on the monotonic clock and on the
 * wall clock, whichever runs out first. The backend's expiry is at least `start + ttl` for any call
 * that started at `start` and succeeded, so the margin is all that separates the two.
 */
export class LocalDeadline {
  readonly #timers: Timers
  readonly #usableMs: number
  #mono = 0
  /** Keeps moving while the host is suspended, unlike the monotonic clock. */
  #wall = Number.POSITIVE_INFINITY
  #lastSuccessStart = Number.NEGATIVE_INFINITY

  constructor(timers: Timers, usableMs: number, acquireStartedAt: Instant) {
    this.#timers = timers
    this.#usableMs = usableMs
    this.extend(acquireStartedAt)
  }

  /** Monotonic start of the last success that moved the deadline. */
  get lastSuccessStart(): number {
    return this.#lastSuccessStart
  }

  /**
   * A call that started at `start` succeeded. Returns false when an earlier-started success already
   * counted for more (replies can arrive out of order once calls overlap).
   */
  extend(start: Instant): boolean {
    if (start.mono < this.#lastSuccessStart) return false
    this.#lastSuccessStart = start.mono
    this.#mono = start.mono + this.#usableMs
    // A wall clock stepped back makes this later than it should be; the monotonic deadline still holds.
    this.#wall = start.wall === undefined ? Number.POSITIVE_INFINITY : start.wall + this.#usableMs
    return true
  }

  /**
   * Milliseconds left: the sooner of the monotonic and the wall-clock deadline (<= 0 once passed), as
   * of `now` (default: read the clocks), which a batch reads once for all its leases.
   */
  remaining(now?: Instant): number {
    const mono = this.#mono - (now === undefined ? this.#timers.now() : now.mono)
    const wall = this.#timers.wallNow
      ? this.#wall - (now?.wall ?? this.#timers.wallNow())
      : Number.POSITIVE_INFINITY
    return Math.min(mono, wall)
  }
}
