import {
  type Backend,
  FencedError,
  LeaseExpiredError,
  type LeaseRecord,
  type RenewOutcome,
  raceAbort,
} from '@worklease/spec'
import { linkedController } from './abortable.js'
import { type Instant, instant, type Timers } from './timers.js'

/** @internal Asks a lease whether its renewal, due in `slot`, should go out now. */
export const startRenewal: unique symbol = Symbol('worklease.startRenewal')
/** @internal Hands a lease the outcome of the renewal it started. */
export const finishRenewal: unique symbol = Symbol('worklease.finishRenewal')

/** @internal A lease as the schedule sees it. */
export interface ScheduledLease {
  readonly record: LeaseRecord
  /**
   * Whether to renew now: false when `slot` is no longer its slot (it was scheduled again since), or
   * when it ended, waits for its release or is being renewed already. True marks it as being renewed.
   */
  [startRenewal](slot: number): boolean
  /**
   * The outcome of the renewal it started: `sentAt` when the store renewed it, else the error that
   * `renew` would have thrown (a lease outcome, or the store's failure).
   */
  [finishRenewal](sentAt: Instant, error?: unknown): void
}

/**
 * @internal Renews one Leaser's leases in batches, with one timer for all of them. Time is cut into
 * slots of `windowMs`; a lease due at `dueAt` waits in the slot holding it, and every lease of a slot
 * goes out at the slot's start, in one `backend.renewMany` per chunk of
 * `capabilities.renewMany.maxRecords`: no renewal is sent after it was due, none more than `windowMs`
 * before. Each lease hears only its own outcome: `'expired'` and `'fenced'` as the errors `renew`
 * would throw, and a failure of the store as that failure for every lease of its chunk (transient:
 * each lease retries, as after a lost reply).
 *
 * A renewed lease's deadline moves from the moment its batch was sent, which is no later than the
 * moment the store judged it: the clock model of a single `renew`.
 *
 * Per renewal this costs an array slot and two calls; a timer and a promise per lease per interval,
 * as one renew each needs, were most of the runner's CPU at 100,000 leases.
 */
export class RenewalSchedule {
  readonly #renewMany: NonNullable<Backend['renewMany']>
  readonly #ttlMs: number
  readonly #timers: Timers
  readonly #windowMs: number
  readonly #callTimeoutMs: number
  readonly #maxRecords: number
  /**
   * Leases by slot, and how many of them still wait there: a lease scheduled again or unscheduled
   * stays in its old slot's list (removing it would cost a search) and is skipped there; a slot
   * nobody waits in any more is dropped, so a Leaser with no lease left has no timer left.
   */
  readonly #slots = new Map<number, { readonly leases: ScheduledLease[]; waiting: number }>()
  #timer: unknown
  /** The slot the timer is set for; undefined while no timer is set. */
  #timerSlot: number | undefined

  constructor(
    backend: Backend,
    options: { ttlMs: number; timers: Timers; windowMs: number; callTimeoutMs: number },
  ) {
    this.#renewMany = backend.renewMany!.bind(backend)
    this.#ttlMs = options.ttlMs
    this.#timers = options.timers
    this.#windowMs = Math.max(1, options.windowMs)
    this.#callTimeoutMs = options.callTimeoutMs
    this.#maxRecords = Math.max(1, Math.floor(backend.capabilities.renewMany?.maxRecords ?? 1))
  }

  /** Whether `backend` can renew in batches: it declares the capability and has the method. */
  static supports(backend: Backend): boolean {
    return backend.capabilities.renewMany !== undefined && typeof backend.renewMany === 'function'
  }

  /**
   * Renews `lease` with the slot holding `dueAt` (monotonic ms): never later than `dueAt`. Returns
   * the slot, which the lease keeps to know its own entry from an older one; a lease already in that
   * slot (`current`) is not added twice.
   */
  at(lease: ScheduledLease, dueAt: number, current?: number): number {
    const slot = Math.floor(dueAt / this.#windowMs)
    if (slot === current) return slot
    if (current !== undefined) this.leave(current)
    const entry = this.#slots.get(slot)
    if (entry) {
      entry.leases.push(lease)
      entry.waiting++
    } else {
      this.#slots.set(slot, { leases: [lease], waiting: 1 })
    }
    if (this.#timerSlot === undefined || slot < this.#timerSlot) this.#arm(slot)
    return slot
  }

  /** A lease waiting in `slot` no longer does (it ended, or was scheduled elsewhere). */
  leave(slot: number): void {
    const entry = this.#slots.get(slot)
    if (entry === undefined || --entry.waiting > 0) return
    this.#slots.delete(slot)
    if (slot !== this.#timerSlot) return
    this.#timers.clearTimeout(this.#timer)
    this.#timer = undefined
    this.#timerSlot = undefined
    const next = this.#earliest()
    if (next !== undefined) this.#arm(next)
  }

  #earliest(): number | undefined {
    let earliest: number | undefined
    for (const slot of this.#slots.keys()) if (earliest === undefined || slot < earliest) earliest = slot
    return earliest
  }

  /** Renews `lease` with the next batch, within one window from now, so renewals asked together share it. */
  soon(lease: ScheduledLease, current?: number): number {
    return this.at(lease, this.#timers.now() + this.#windowMs, current)
  }

  #arm(slot: number): void {
    this.#timers.clearTimeout(this.#timer)
    this.#timerSlot = slot
    this.#timer = this.#timers.setTimeout(() => this.#fire(slot), slot * this.#windowMs - this.#timers.now())
  }

  #fire(fired: number): void {
    this.#timer = undefined
    this.#timerSlot = undefined
    // Every slot that has begun by now, and the fired one even if its timer ran ahead of the clock.
    const last = Math.max(fired, Math.floor(this.#timers.now() / this.#windowMs))
    const due: [number, ScheduledLease[]][] = []
    for (const [slot, entry] of this.#slots) if (slot <= last) due.push([slot, entry.leases])
    for (const [slot] of due) this.#slots.delete(slot)
    const next = this.#earliest()
    if (next !== undefined) this.#arm(next)
    const sending: ScheduledLease[] = []
    for (const [slot, leases] of due) {
      for (const lease of leases) if (lease[startRenewal](slot)) sending.push(lease)
    }
    this.#sendAll(sending)
  }

  /**
   * In chunks of `maxRecords`, in one pass: a workId already in the chunk being filled (a repeat,
   * which the contract refuses in one call) waits for a call after these.
   */
  #sendAll(leases: readonly ScheduledLease[]): void {
    let chunk: ScheduledLease[] = []
    let workIds = new Set<string>()
    const repeats: ScheduledLease[] = []
    for (const lease of leases) {
      const { workId } = lease.record
      if (workIds.has(workId)) {
        repeats.push(lease)
        continue
      }
      workIds.add(workId)
      chunk.push(lease)
      if (chunk.length === this.#maxRecords) {
        void this.#send(chunk)
        chunk = []
        workIds = new Set()
      }
    }
    if (chunk.length > 0) void this.#send(chunk)
    if (repeats.length > 0) this.#sendAll(repeats)
  }

  async #send(chunk: readonly ScheduledLease[]): Promise<void> {
    const { controller, dispose } = linkedController(this.#timers, [], this.#callTimeoutMs)
    const sentAt = instant(this.#timers)
    let outcomes: RenewOutcome[]
    try {
      // raceAbort: a driver that ignored the signal still frees its leases at the timeout.
      outcomes = await raceAbort(
        this.#renewMany(
          chunk.map((lease) => lease.record),
          this.#ttlMs,
          { signal: controller.signal },
        ),
        controller.signal,
      )
      if (!Array.isArray(outcomes) || outcomes.length !== chunk.length) {
        throw new TypeError(
          `renewMany returned ${Array.isArray(outcomes) ? outcomes.length : typeof outcomes} outcomes for ${chunk.length} records`,
        )
      }
    } catch (error) {
      for (const lease of chunk) lease[finishRenewal](sentAt, error)
      return
    } finally {
      dispose()
    }
    for (let i = 0; i < chunk.length; i++) {
      const outcome = outcomes[i]
      const lease = chunk[i]!
      if (outcome === 'renewed') lease[finishRenewal](sentAt)
      else if (outcome === 'expired') lease[finishRenewal](sentAt, new LeaseExpiredError())
      else if (outcome === 'fenced') lease[finishRenewal](sentAt, new FencedError())
      else {
        lease[finishRenewal](
          sentAt,
          new TypeError(`renewMany returned an unknown outcome: ${String(outcome)}`),
        )
      }
    }
  }
}
