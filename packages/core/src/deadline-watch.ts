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

/** A forward step of the wall clock against the monotonic one this large has every deadline checked. */
const WALL_STEP_MS = 100

/**
 * @internal Where one Leaser's leases wait for their local deadlines, with one timer for all of them:
 * a lease files itself under its deadline; when that slot begins it is renewed (and files itself again
 * under the later deadline) or its deadline is less than a window away and it sets a timer of its own
 * for the exact moment. So a lease that keeps renewing costs an array slot per ttl and never a timer;
 * one timer per lease per ttl was a third of the runner's CPU at 100,000 leases.
 *
 * The window is a tenth of the usable ttl, at most a second: a few dozen wakeups per ttl for the whole
 * Leaser, and a deadline rarely less than a window away when its slot begins.
 *
 * Deadlines are filed on the monotonic clock, but a lease also ends by the wall clock, which a host
 * suspend (the monotonic clock stands still) or an NTP step moves on its own. So while leases wait,
 * and the timers have a wall clock, the watch compares the two clocks once a window; when the wall
 * clock has gained {@link WALL_STEP_MS} or more (a window, if shorter) since every lease last read
 * both clocks, in one step or in many smaller ones, every lease is checked at once: a kept
 * `lease.signal` aborts within a window and a step of its wall-clock deadline, not at the lease's
 * next renewal. A wall clock that gains slowly (NTP slewing, at most 0.05%) costs one such check
 * every few minutes.
 */
export class DeadlineWatch extends TimerWheel<WatchedLease> {
  readonly #timers: Timers
  readonly #stepMs: number
  #heartbeat: unknown
  /**
   * How far the wall clock was ahead of the monotonic one: the least since every lease last read both
   * clocks. Every lease filed its deadline with a lead no smaller, so a gain of less than a step over
   * it leaves every filing within a step of right, however many looks the gains were spread over.
   */
  #wallLead = 0

  constructor(timers: Timers, usableMs: number) {
    const windowMs = Math.max(1, Math.min(1_000, Math.floor(usableMs / 10)))
    super(
      timers,
      windowMs,
      (due) => {
        const now = instant(timers)
        for (const { slot, items } of due) for (const lease of items) lease[deadlineDue](slot, now)
      },
      (lease) => lease[deadlineSlot],
    )
    this.#timers = timers
    this.#stepMs = Math.min(windowMs, WALL_STEP_MS)
  }

  override at(item: WatchedLease, dueAt: number, current?: number): number {
    const slot = super.at(item, dueAt, current)
    if (this.#heartbeat === undefined && this.#timers.wallNow !== undefined) {
      this.#wallLead = wallLead(this.#timers, this.#stepMs) ?? 0
      this.#heartbeat = this.#timers.setTimeout(this.#onHeartbeat, this.windowMs)
    }
    return slot
  }

  override clearIfIdle(): void {
    super.clearIfIdle()
    if (!this.idle || this.#heartbeat === undefined) return
    this.#timers.clearTimeout(this.#heartbeat)
    this.#heartbeat = undefined
  }

  readonly #onHeartbeat = (): void => {
    this.#heartbeat = undefined
    if (this.idle) return
    const lead = wallLead(this.#timers, this.#stepMs)
    this.#heartbeat = this.#timers.setTimeout(this.#onHeartbeat, this.windowMs)
    // No trustworthy reading this time (the process was descheduled between its reads): the next.
    if (lead === undefined) return
    // A reading that is no time is checked too: each lease then reads the clocks itself.
    const stepped = !(lead - this.#wallLead < this.#stepMs)
    // After a check every lease has filed itself again at today's lead; otherwise only a lower one
    // (the wall clock set back) moves the baseline: gains add up until they make a step.
    if (Number.isFinite(lead) && (stepped || lead < this.#wallLead)) this.#wallLead = lead
    if (stepped) this.dueAll()
  }
}

/**
 * How far the wall clock is ahead of the monotonic one: the monotonic clock read between two wall
 * readings, so a process descheduled between its reads (both clocks moving on alike) does not look
 * like a step. Undefined when the wall clock moved `toleranceMs` or more across the three reads, three
 * times in a row; NaN when a clock reads no time.
 */
function wallLead(timers: Timers, toleranceMs: number): number | undefined {
  for (let attempt = 0; attempt < 3; attempt++) {
    const before = timers.wallNow!()
    const mono = timers.now()
    const after = timers.wallNow!()
    if (!(after - before >= toleranceMs)) return (before + after) / 2 - mono
  }
  return undefined
}
