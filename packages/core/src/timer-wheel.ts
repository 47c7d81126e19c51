import { throwLater } from './throw-later.js'
import type { Timers } from './timers.js'

/**
 * @internal Items due at given moments, with one timer for all of them. Time is cut into slots of
 * `windowMs`; an item due at `dueAt` waits in the slot holding it and is handed to `onDue` at the
 * slot's start: never after it was due, at most `windowMs` before.
 *
 * An item filed again or withdrawn stays in its old slot's list (removing it would cost a search):
 * its owner keeps the slot number {@link at} returned (`slotOf` reads it) and ignores a call for any
 * other. A slot nobody waits in any more is dropped, and the timer set for it left to fire once and
 * find nothing due; one that most of its items left is compacted, so a process cycling through short
 * leases beside long ones does not hold on to every short one until its slot begins.
 */
export class TimerWheel<T> {
  readonly #timers: Timers
  readonly #windowMs: number
  readonly #onDue: (due: readonly DueSlot<T>[]) => void
  readonly #slotOf: (item: T) => number | undefined
  readonly #slots = new Map<number, { items: T[]; waiting: number }>()
  #timer: unknown
  /** The slot the timer is set for; undefined while no timer is set. */
  #timerSlot: number | undefined

  /**
   * `onDue` gets every slot that has begun when the timer fires, earliest first; `slotOf` tells the
   * slot an item waits in now (undefined once it left), cleared by its owner before it calls
   * {@link leave}.
   */
  constructor(
    timers: Timers,
    windowMs: number,
    onDue: (due: readonly DueSlot<T>[]) => void,
    slotOf: (item: T) => number | undefined,
  ) {
    this.#timers = timers
    this.#windowMs = Math.max(1, windowMs)
    this.#onDue = onDue
    this.#slotOf = slotOf
  }

  /** @internal Items held in every slot, those that left included: what compaction bounds. */
  get held(): number {
    let held = 0
    for (const entry of this.#slots.values()) held += entry.items.length
    return held
  }

  get windowMs(): number {
    return this.#windowMs
  }

  /**
   * Files `item` in the slot holding `dueAt` (monotonic ms) and returns that slot. An item already
   * waiting in it (`current`) is not filed twice; one waiting elsewhere leaves its old slot.
   */
  at(item: T, dueAt: number, current?: number): number {
    const slot = Math.floor(dueAt / this.#windowMs)
    if (slot === current) return slot
    if (current !== undefined) this.leave(current)
    const entry = this.#slots.get(slot)
    if (entry) {
      entry.items.push(item)
      entry.waiting++
    } else {
      this.#slots.set(slot, { items: [item], waiting: 1 })
    }
    // With no timer (none armed yet, or a re-arm refused), for the earliest slot: after a refusal,
    // an earlier one may be waiting without one.
    if (this.#timerSlot === undefined) this.#arm(this.#earliest()!)
    else if (slot < this.#timerSlot) this.#arm(slot)
    return slot
  }

  /** An item waiting in `slot` no longer does (it ended, or was filed elsewhere). */
  leave(slot: number): void {
    const entry = this.#slots.get(slot)
    if (entry === undefined) return
    if (--entry.waiting > 0) {
      // Linear, and only once as many more left as still wait (plus some): amortized O(1) a leave.
      if (entry.items.length >= 2 * entry.waiting + 32) {
        entry.items = entry.items.filter((item) => this.#slotOf(item) === slot)
      }
      return
    }
    // The timer stays set, even for a slot nobody waits in any more: it fires once and finds
    // nothing due. A lease acquired and released on its own set and cleared it each time.
    this.#slots.delete(slot)
  }

  /** Whether no item waits in any slot. */
  get idle(): boolean {
    return this.#slots.size === 0
  }

  /**
   * Hands every slot to `onDue` now, as if all had begun: the clock items were filed on no longer
   * tells when they are due (another clock they also count on was stepped).
   */
  dueAll(): void {
    if (this.#timer !== undefined) this.#timers.clearTimeout(this.#timer)
    this.#fire(Number.POSITIVE_INFINITY)
  }

  /** Clears the timer if nothing waits (a Leaser that closed leaves nothing armed). */
  clearIfIdle(): void {
    if (this.#slots.size > 0 || this.#timer === undefined) return
    this.#timers.clearTimeout(this.#timer)
    this.#timer = undefined
    this.#timerSlot = undefined
  }

  #earliest(): number | undefined {
    let earliest: number | undefined
    for (const slot of this.#slots.keys()) if (earliest === undefined || slot < earliest) earliest = slot
    return earliest
  }

  #arm(slot: number): void {
    if (this.#timer !== undefined) this.#timers.clearTimeout(this.#timer)
    this.#timer = undefined
    this.#timerSlot = undefined
    // One callback for every timer: a lone lease filed and withdrawn, over and over, allocates none.
    this.#timer = this.#timers.setTimeout(this.#onTimer, slot * this.#windowMs - this.#timers.now())
    // Once armed: timers that refuse leave no slot the wheel takes for armed, and the next file arms.
    this.#timerSlot = slot
  }

  readonly #onTimer = (): void => this.#fire(this.#timerSlot!)

  #fire(fired: number): void {
    this.#timer = undefined
    this.#timerSlot = undefined
    // Every slot that has begun by now, and the fired one even if its timer ran ahead of the clock.
    const last = Math.max(fired, Math.floor(this.#timers.now() / this.#windowMs))
    const due: DueSlot<T>[] = []
    for (const [slot, entry] of this.#slots) if (slot <= last) due.push({ slot, items: entry.items })
    for (const { slot } of due) this.#slots.delete(slot)
    due.sort((a, b) => a.slot - b.slot)
    const next = this.#earliest()
    // A re-arm that timers refuse (reported, as user code's bugs are) costs the slots after these a
    // timer until the next file arms one; these are due all the same.
    if (next !== undefined) {
      try {
        this.#arm(next)
      } catch (error) {
        throwLater(error)
      }
    }
    this.#onDue(due)
  }
}

/** @internal A slot that began, with what was filed in it (withdrawn items included). */
export interface DueSlot<T> {
  readonly slot: number
  readonly items: readonly T[]
}
