import type { Instant, Timers } from './timers.js'

/**
 * @internal When a lease stops being ours as far as this process can tell: the start of the last
 * successful acquire, renew or checkpoint + `ttl - safetyMargin`, on the monotonic clock and on the
 * wall clock, whichever runs out first. The backend's expiry is at least `start + ttl` for any call
 * that started at `start` and succeeded, so the margin is all that separates the two.
 *
 * Kept in whole milliseconds, rounded down (a lease ends up to a millisecond early, never late), the
 * wall clock's counted from {@link WALL_ORIGIN}: V8 keeps a small integer in the object itself, but
 * a fraction or a number the size of `Date.now()` in a heap object of its own, a new one each time
 * it changes. At 100,000 leases that was a fifth of what renewing them allocated.
 */
export class LocalDeadline {
  readonly #timers: Timers
  readonly #usableMs: number
  #mono = 0
  /** Keeps moving while the host is suspended, unlike the monotonic clock; undefined without one. */
  #wall: number | undefined
  #lastSuccessStart = 0
  #extended = false

  constructor(timers: Timers, usableMs: number, acquireStartedAt: Instant) {
    this.#timers = timers
    this.#usableMs = usableMs
    this.extend(acquireStartedAt)
  }

  /** Monotonic start of the last success that moved the deadline, in whole ms (rounded down). */
  get lastSuccessStart(): number {
    return this.#lastSuccessStart
  }

  /**
   * A call that started at `start` succeeded. Returns false when an earlier-started success already
   * counted for more (replies can arrive out of order once calls overlap).
   */
  extend(start: Instant): boolean {
    // A reading that is no time (NaN from a mocked Date, say) would make a deadline that never
    // passes: NaN compares false with everything. It proves nothing, so it moves nothing.
    if (!Number.isFinite(start.mono) || (start.wall !== undefined && !Number.isFinite(start.wall)))
      return false
    const startMs = Math.floor(start.mono)
    if (this.#extended && startMs < this.#lastSuccessStart) return false
    this.#extended = true
    this.#lastSuccessStart = startMs
    this.#mono = Math.floor(start.mono + this.#usableMs)
    // A wall clock stepped back makes this later than it should be; the monotonic deadline still holds.
    this.#wall = start.wall === undefined ? undefined : Math.floor(start.wall + this.#usableMs) - WALL_ORIGIN
    return true
  }

  /**
   * Milliseconds left: the sooner of the monotonic and the wall-clock deadline (<= 0 once passed), as
   * of `now` (default: read the clocks), which a batch reads once for all its leases.
   */
  remaining(now?: Instant): number {
    // Until a start is counted (the first was a reading of no time), no time is left, whatever the
    // monotonic clock's origin.
    if (!this.#extended) return 0
    const monoNow = now === undefined ? this.#timers.now() : now.mono
    // A clock that reads no time now cannot show the lease is still ours.
    if (!Number.isFinite(monoNow)) return 0
    const mono = this.#mono - monoNow
    if (this.#wall === undefined) return mono
    const wallNow = now === undefined ? this.#timers.wallNow?.() : now.wall
    if (wallNow === undefined) return mono
    if (!Number.isFinite(wallNow)) return 0
    // Integer + integer first: exact, so the difference is as exact as the clock reading.
    return Math.min(mono, this.#wall + WALL_ORIGIN - wallNow)
  }
}

/** Where wall-clock deadlines are counted from: a recent moment keeps them small integers. */
const WALL_ORIGIN = Date.now()
