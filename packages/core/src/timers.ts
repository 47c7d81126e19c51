/**
 * The clock and timers a {@link Leaser} runs on. `now()` must be monotonic (never jumps back, not
 * affected by wall-clock changes): local lease expiry is measured on it. Inject your own to drive a
 * Leaser from a fake clock in tests.
 *
 * ```ts
 * const timers: Timers = {
 *   now: () => performance.now(),
 *   setTimeout: (callback, ms) => setTimeout(callback, ms).unref(),
 *   clearTimeout: (handle) => clearTimeout(handle as NodeJS.Timeout),
 * }
 * ```
 */
export interface Timers {
  /** Monotonic milliseconds (any origin). */
  now(): number
  /** Calls `callback` once after `ms` milliseconds; returns a handle for {@link clearTimeout}. */
  setTimeout(callback: () => void, ms: number): unknown
  /** Cancels a timer; ignores handles that already fired or were cleared. */
  clearTimeout(handle: unknown): void
}

// Node.js timers overflow to 1 ms beyond this.
const MAX_TIMER_MS = 2_147_483_647

/**
 * `performance.now()` and Node.js timers that are unref'd, so a held lease never keeps a finished
 * process alive.
 */
export const systemTimers: Timers = Object.freeze({
  now: () => performance.now(),
  setTimeout: (callback: () => void, ms: number) => {
    const timer = setTimeout(callback, Math.min(Math.max(0, ms), MAX_TIMER_MS))
    timer.unref()
    return timer
  },
  clearTimeout: (handle: unknown) => clearTimeout(handle as ReturnType<typeof setTimeout>),
})
