/**
 * A source of wall-clock time in epoch milliseconds. Client-clock backends take one so that tests
 * (and the testkit's skew cases) can run each simulated process on its own clock.
 *
 * ```ts
 * const backend = new MemoryBackend({ clock: { now: () => Date.now() + 250 } })
 * ```
 */
export interface Clock {
  now(): number
}

/** The process clock. */
export const systemClock: Clock = Object.freeze({ now: () => Date.now() })
