import type { Clock } from '@worklease/spec'

/**
 * A clock that moves only when told to, so client-clock expiry can be tested to the millisecond.
 *
 * ```ts
 * const clock = new ManualClock(Date.UTC(2030, 0, 1))
 * clock.advance(30_000)
 * ```
 */
export class ManualClock implements Clock {
  #now: number

  constructor(startMs: number = Date.now()) {
    this.#now = startMs
  }

  now(): number {
    return this.#now
  }

  advance(ms: number): void {
    this.#now += ms
  }

  set(ms: number): void {
    this.#now = ms
  }
}
