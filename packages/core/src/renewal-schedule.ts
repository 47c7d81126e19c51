import {
  type Backend,
  FencedError,
  LeaseExpiredError,
  type LeaseRecord,
  type RenewOutcome,
  raceAbort,
} from '@worklease/spec'
import { Cancel, invoke, linkedController } from './abortable.js'
import { RenewalChunks } from './renewal-chunks.js'
import { throwLater } from './throw-later.js'
import { type DueSlot, TimerWheel } from './timer-wheel.js'
import { type Instant, instant, type Timers } from './timers.js'

/** @internal Asks a lease whether its renewal, due in `slot`, should go out now. */
export const startRenewal: unique symbol = Symbol('worklease.startRenewal')
/** @internal Hands a lease the outcome of the renewal it started. */
export const finishRenewal: unique symbol = Symbol('worklease.finishRenewal')
/** @internal The slot a lease's renewal waits in, undefined while it waits in none. */
export const renewalSlot: unique symbol = Symbol('worklease.renewalSlot')

/** @internal A lease as the schedule sees it. */
export interface ScheduledLease {
  readonly record: LeaseRecord
  readonly [renewalSlot]: number | undefined
  /**
   * Whether to renew `now` (the slot's start, read once for the batch): false when `slot` is no
   * longer its slot (it was scheduled again since), or when it ended, waits for its release or is
   * being renewed already. True marks it as being renewed.
   */
  [startRenewal](slot: number, now: Instant): boolean
  /**
   * The outcome of the renewal it started, in the reply that came back at `receivedAt`: `sentAt`
   * when the store renewed it, else the error that `renew` would have thrown (a lease outcome, or the
   * store's failure).
   */
  [finishRenewal](sentAt: Instant, receivedAt: Instant, error?: unknown): void
}

/**
 * @internal Renews one Leaser's leases in batches, with one timer for all of them (a TimerWheel):
 * time is cut into slots of `windowMs`; a lease due at `dueAt` waits in the slot holding it, and every
 * lease of a slot goes out at the slot's start, in one `backend.renewMany` per chunk of
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
  readonly #callTimeoutMs: number
  readonly #maxRecords: number
  readonly #wheel: TimerWheel<ScheduledLease>
  readonly #mayRepeat: () => boolean
  /** Aborts the batches still out when the Leaser closes. */
  readonly #stopped = new Cancel()

  /**
   * `mayRepeat` tells whether two leases of one workId may be due together (the Leaser knows: it
   * holds two leases of a workId only while one it let go is still live in the store); while it
   * says no, chunks are filled without looking for repeats. Default: always look.
   */
  constructor(
    backend: Backend,
    options: {
      /** The backend's `capabilities.renewMany.maxRecords`, as the Leaser read and checked it. */
      maxRecords: number
      ttlMs: number
      timers: Timers
      windowMs: number
      callTimeoutMs: number
      mayRepeat?: () => boolean
    },
  ) {
    this.#renewMany = backend.renewMany!.bind(backend)
    this.#ttlMs = options.ttlMs
    this.#timers = options.timers
    this.#wheel = new TimerWheel(
      options.timers,
      options.windowMs,
      (due) => this.#fire(due),
      (lease) => lease[renewalSlot],
    )
    this.#callTimeoutMs = options.callTimeoutMs
    this.#mayRepeat = options.mayRepeat ?? (() => true)
    this.#maxRecords = options.maxRecords
  }

  /**
   * Renews `lease` with the slot holding `dueAt` (monotonic ms): never later than `dueAt`. Returns
   * the slot, which the lease keeps to know its own entry from an older one; a lease already in that
   * slot (`current`) is not added twice.
   */
  at(lease: ScheduledLease, dueAt: number, current?: number): number {
    return this.#wheel.at(lease, dueAt, current)
  }

  /** A lease waiting in `slot` no longer does (it ended, or was scheduled elsewhere). */
  leave(slot: number): void {
    this.#wheel.leave(slot)
  }

  /** Clears the timer if no lease waits (the Leaser closed). */
  clearIfIdle(): void {
    this.#wheel.clearIfIdle()
  }

  /**
   * Aborts every batch still out with `reason` (the Leaser closed: the store may hang, and no call of
   * ours outlives close), and any batch sent after.
   */
  abortAll(reason: unknown): void {
    this.#stopped.abort(reason)
  }

  /** Renews `lease` with the next batch, within one window from now, so renewals asked together share it. */
  soon(lease: ScheduledLease, current?: number): number {
    return this.at(lease, this.#timers.now() + this.#wheel.windowMs, current)
  }

  #fire(due: readonly DueSlot<ScheduledLease>[]): void {
    // The clocks read once, not four times a lease: a tenth of a batched renewal's CPU.
    const now = instant(this.#timers)
    const chunks = new RenewalChunks<ScheduledLease>(this.#maxRecords, this.#mayRepeat(), (chunk) => {
      void this.#send(chunk)
    })
    for (const { slot, items } of due) {
      for (let i = 0; i < items.length; i++) {
        const lease = items[i]!
        if (lease[startRenewal](slot, now)) chunks.add(lease)
      }
    }
    chunks.flush()
  }

  /**
   * Sends one batch and gives every lease of it its outcome, whatever throws on the way (the injected
   * timers arming its timeout, the driver's reply): a lease left without one stays in a batch for
   * good, never renewed again.
   */
  async #send(chunk: readonly ScheduledLease[]): Promise<void> {
    const sentAt = instant(this.#timers)
    let dispose: (() => void) | undefined
    let outcomes: RenewOutcome[]
    try {
      const linked = linkedController(this.#timers, [this.#stopped], this.#callTimeoutMs)
      dispose = linked.dispose
      // raceAbort: a driver that ignored the signal still frees its leases at the timeout. invoke: a
      // driver's method is user code, which may throw or answer without a promise.
      const reply: unknown = await raceAbort(
        invoke(() =>
          this.#renewMany(
            chunk.map((lease) => lease.record),
            this.#ttlMs,
            { signal: linked.controller.signal },
          ),
        ),
        linked.controller.signal,
      )
      if (!Array.isArray(reply) || reply.length !== chunk.length) {
        throw new TypeError(
          `renewMany returned ${Array.isArray(reply) ? reply.length : typeof reply} outcomes for ${chunk.length} records`,
        )
      }
      // Each element read once, here: one that throws fails the batch, not the leases after it.
      outcomes = Array.from(reply as RenewOutcome[])
    } catch (error) {
      const receivedAt = instant(this.#timers)
      for (const lease of chunk) finish(lease, sentAt, receivedAt, error)
      return
    } finally {
      dispose?.()
    }
    const receivedAt = instant(this.#timers)
    for (let i = 0; i < chunk.length; i++) {
      const outcome = outcomes[i]
      const lease = chunk[i]!
      if (outcome === 'renewed') finish(lease, sentAt, receivedAt)
      else if (outcome === 'expired') finish(lease, sentAt, receivedAt, new LeaseExpiredError())
      else if (outcome === 'fenced') finish(lease, sentAt, receivedAt, new FencedError())
      else {
        finish(
          lease,
          sentAt,
          receivedAt,
          new TypeError(`renewMany returned an unknown outcome: ${String(outcome)}`),
        )
      }
    }
  }
}

/** One lease's outcome; a throw there (the injected timers re-arming it) spares the others. */
function finish(lease: ScheduledLease, sentAt: Instant, receivedAt: Instant, error?: unknown): void {
  try {
    lease[finishRenewal](sentAt, receivedAt, error)
  } catch (thrown) {
    throwLater(thrown)
  }
}
