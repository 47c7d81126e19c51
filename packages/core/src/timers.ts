/**
 * The clocks and timers a {@link Leaser} runs on. `now()` must be monotonic (never jumps back, not
 * affected by wall-clock changes): local lease expiry is measured on it. `wallNow()`, if given, is
 * the wall clock, measured too because the monotonic clock stands still while the host is suspended;
 * it can only make a lease expire sooner, never later. Inject your own to drive a Leaser from a fake
 * clock in tests.
 *
 * ```ts
 * const timers: Timers = {
 *   now: () => performance.now(),
 *   wallNow: () => Date.now(),
 *   setTimeout: (callback, ms) => setTimeout(callback, ms).unref(),
 *   clearTimeout: (handle) => clearTimeout(handle as NodeJS.Timeout),
 * }
 * ```
 */
export interface Timers {
  /** Monotonic milliseconds (any origin). */
  now(): number
  /**
   * Wall-clock milliseconds (`Date.now()`). `performance.now()` (CLOCK_MONOTONIC on Linux) does not
   * advance while the host is suspended, so after a suspend longer than the ttl only this clock shows
   * that the lease is gone. A lease is lost when either clock says its time is up; a wall clock
   * stepped forward (by NTP, say) can thus end a lease early, one stepped back never extends it.
   * Omit it to measure on the monotonic clock alone.
   */
  wallNow?(): number
  /** Calls `callback` once after `ms` milliseconds; returns a handle for {@link clearTimeout}. */
  setTimeout(callback: () => void, ms: number): unknown
  /** Cancels a timer; ignores handles that already fired or were cleared. */
  clearTimeout(handle: unknown): void
}

/** @internal The longest delay a Node.js timer takes: beyond it, it overflows to 1 ms. */
export const MAX_TIMER_MS = 2_147_483_647

/**
 * `performance.now()`, `Date.now()` and Node.js timers that are unref'd, so a held lease never keeps
 * a finished process alive.
 */
export const systemTimers: Timers = Object.freeze({
  now: () => performance.now(),
  wallNow: () => Date.now(),
  setTimeout: (callback: () => void, ms: number) => {
    const timer = setTimeout(callback, Math.min(Math.max(0, ms), MAX_TIMER_MS))
    timer.unref()
    return timer
  },
  clearTimeout: (handle: unknown) => clearTimeout(handle as ReturnType<typeof setTimeout>),
})

/** @internal A moment on both clocks; `wall` is undefined when the timers have no wall clock. */
export interface Instant {
  readonly mono: number
  readonly wall: number | undefined
}

/** @internal Now, on both clocks. */
export function instant(timers: Timers): Instant {
  return { mono: timers.now(), wall: timers.wallNow?.() }
}
