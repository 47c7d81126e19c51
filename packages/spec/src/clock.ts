import { InvalidArgumentError } from './errors.js'
import { readOnce } from './validation.js'
/**
 * A source of wall-clock time in epoch milliseconds, whole or not: a high-resolution clock's
 * fractions are a time, which a backend stores and reads back as any other. Client-clock backends
 * take one so that tests (and the testkit's skew cases) can run each simulated process on its own
 * clock, and read it with {@link readClock}, which refuses a reading that is no time.
 *
 * ```ts
 * const backend = new MemoryBackend({ clock: { now: () => Date.now() + 250 } })
 * ```
 */
export interface Clock {
  now(): number
}

/**
 * The largest clock reading a backend works with, in either direction: a lease's expiry (`now + ttl`)
 * and a release's past (`now - 1`) stay valid Dates from it.
 */
export const MAX_CLOCK_MS = 8.64e15 - 2 ** 31

/**
 * Reads `clock` for a client-clock backend, refusing what is no time: NaN (it compares false with
 * every expiry, so a lease written from it is never live, or never ends), an infinity, a reading past
 * {@link MAX_CLOCK_MS}, anything but a number. That is a fault of the backend's clock, not of the
 * call's input nor a lease outcome: a `RangeError`, before anything is sent or stored.
 *
 * ```ts
 * const now = readClock(this.#clock)
 * ```
 */
export function readClock(clock: Clock): number {
  const now = clock.now()
  // One comparison pair rejects NaN, both infinities, out-of-range numbers and (typeof) the rest.
  if (typeof now !== 'number' || !(now >= -MAX_CLOCK_MS && now <= MAX_CLOCK_MS)) {
    throw new RangeError(`the backend's clock read ${String(now)}, not a time in epoch ms`)
  }
  return now
}

/**
 * Checks a backend's `clock` option and keeps what was checked: its `now` function, read once and
 * called on the clock as a method. A getter answering a function to the check and something else to
 * every later call would otherwise fail each call with a `TypeError` the constructor let through.
 * Anything but an object with a `now` function is an `InvalidArgumentError`.
 *
 * ```ts
 * this.#clock = checkClock(clock)
 * ```
 */
export function checkClock(clock: unknown): Clock {
  // A function may be the clock too: `Date` has the `now()` a Clock needs.
  if ((typeof clock !== 'object' && typeof clock !== 'function') || clock === null) {
    throw new InvalidArgumentError('clock must have a now() method')
  }
  const { now } = readOnce(clock, ['now'], 'clock') as { now?: unknown }
  if (typeof now !== 'function') throw new InvalidArgumentError('clock must have a now() method')
  return Object.freeze({ now: () => now.call(clock) as number })
}

/** The process clock. */
export const systemClock: Clock = Object.freeze({ now: () => Date.now() })
