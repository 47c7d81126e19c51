import { TimerWheel } from './timer-wheel.js'
import { type Instant, instant, type Timers } from './timers.js'

/** @internal Tells a lease that the slot it filed its deadline under has begun. */
export const deadlineDue: unique symbol = Symbol('worklease.deadlineDue')
/** @internal The slot a lease's deadline waits in, undefined while it waits in none. */
export const deadlineSlot: unique symbol = Symbol('worklease.deadlineSlot')

/** @internal A lease as the watch sees it. */
export interface WatchedLease {
  readonly [deadlineSlot]: number | undefined
  /**
   * Checks the local deadline as of `now` (read once for the slot); ignored unless `slot` is the slot
   * the lease last filed itself under.
   */
  [deadlineDue](slot: number, now: Instant): void
}

/**
 * @internal Where one Leaser's leases wait for their local deadlines, with one timer for all of them:
 * a lease files itself under its deadline; when that slot begins it is renewed (and files itself again
 * under the later deadline) or its deadline is less than a window away and it sets a timer of its own
 * for the exact moment. So a lease that keeps renewing costs an array slot per ttl and never a timer;
 * one timer per lease per ttl was a third of the runner's CPU at 100,000 leases.
 *
 * The window is a tenth of the usable ttl, at most a second: a few dozen wakeups per ttl for the whole
 * Leaser, and a deadline rarely less than a window away when its slot begins.
 */
export function deadlineWatch(timers: Timers, usableMs: number): TimerWheel<WatchedLease> {
  const windowMs = Math.max(1, Math.min(1_000, Math.floor(usableMs / 10)))
  return new TimerWheel<WatchedLease>(
    timers,
    windowMs,
    (due) => {
      const now = instant(timers)
      for (const { slot, items } of due) for (const lease of items) lease[deadlineDue](slot, now)
    },
    (lease) => lease[deadlineSlot],
  )
}
