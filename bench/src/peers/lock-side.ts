/**
 * One lock library (or worklease) on one store, driven through its public API the way a user calls
 * it. Every peer and worklease implement it, so the peers section measures them all the same way.
 *
 * ```ts
 * const held = await side.tryAcquire('job-1', 30_000)
 * if (held !== null) await side.release(held)
 * ```
 */
export interface LockSide<H = unknown> {
  /** Library and version, e.g. `redlock 4.2.0`. */
  readonly label: string
  /** What the library promises (and does not), printed beside its numbers. */
  readonly semantics: string
  /** How a waiting acquirer learns that the lock is free (polling interval, server-side wait, ...). */
  readonly waiting: string
  /**
   * What this library does less than worklease per acquire + release (store work and local
   * bookkeeping): the report prints it wherever the library comes out ahead of the Leaser.
   */
  readonly doesLess?: string
  /** One attempt, no waiting: `null` when someone holds the lock. `ttlMs` where the library has one. */
  tryAcquire(key: string, ttlMs: number): Promise<H | null>
  release(held: H): Promise<void>
  /** The library's own waiting acquire (its default polling); resolves once held. */
  waitAcquire(key: string, ttlMs: number): Promise<H>
  /**
   * Takes `key` with `ttlMs`, then behaves like a holder that crashed at once: no renewal, no release.
   * Resolves with the `performance.now()` instant from which the lock is free again (for an
   * expiring lock: the acquire call's start + ttl; a session-bound lock: when its connection died),
   * or with a reason why a crash takeover cannot be measured for this library. `freeAt` may still be
   * pending when the crash is a future event (a session-bound holder whose process dies at the ttl).
   */
  crash(key: string, ttlMs: number): Promise<{ freeAt: number | Promise<number> } | { notMeasured: string }>
  /** Round trips (statements, commands, HTTP requests) this side sent so far. */
  roundTrips(): number
  /** Measured in the cycles only (no race, no takeover): worklease's driver without its runner. */
  readonly cyclesOnly?: boolean
  /** What `roundTrips` counts, for the report. */
  readonly roundTripUnit: string
  close(): Promise<void>
}

export const sleep = (ms: number) => new Promise<void>((resolve) => setTimeout(resolve, ms))
