import {
  type Backend,
  type CheckpointRead,
  isFencedError,
  isLeaseExpiredError,
  isWorkleaseError,
  type LeaseListing,
  type LeaseRecord,
  nextCheckpointSequence,
  validateState,
} from '@worklease/spec'
import {
  type Abortable,
  Cancel,
  invoke,
  keepProcessAlive,
  raceWithin,
  sharedAbortController,
  sleep,
} from './abortable.js'
import type { CallSignals } from './call-signals.js'
import type { CheckpointCodec, LeaseCheckpoint } from './checkpoint-codec.js'
import { deadlineDue, deadlineSlot, type WatchedLease } from './deadline-watch.js'
import { LeaseEndedError, type LeaseLossReason, LeaseLostError } from './lease-lost-error.js'
import { isLeaserClosedError } from './leaser-closed-error.js'
import type { LeaserEmitter } from './leaser-events.js'
import { LocalDeadline } from './local-deadline.js'
import {
  finishRenewal,
  type RenewalSchedule,
  renewalSlot,
  type ScheduledLease,
  startRenewal,
} from './renewal-schedule.js'
import { backoffDelay, type ResolvedRetryPolicy } from './retry-policy.js'
import { throwLater } from './throw-later.js'
import type { TimerWheel } from './timer-wheel.js'
import { type Instant, instant, type Timers } from './timers.js'

/** @internal What a {@link Lease} shares with the Leaser that made it. */
export interface LeaseContext {
  readonly backend: Backend
  readonly ttlMs: number
  readonly safetyMarginMs: number
  readonly renewIntervalMs: number
  readonly renewJitter: number
  /** Where the backend renews in batches: renewals go through it, with no timer of their own. */
  readonly schedule: RenewalSchedule | undefined
  /** Where leases wait for their local deadlines, with one timer for all (see DeadlineWatch). */
  readonly deadlines: TimerWheel<WatchedLease>
  readonly callTimeoutMs: number
  readonly checkpointTimeoutMs: number
  /** Signals for the calls bounded by `callTimeoutMs`, shared by calls that start close together. */
  readonly callSignals: CallSignals
  /** The same for checkpoints, bounded by `checkpointTimeoutMs`. */
  readonly checkpointSignals: CallSignals
  readonly retry: ResolvedRetryPolicy
  readonly timers: Timers
  readonly random: () => number
  // Each Lease is typed by its Leaser's codec; the context, shared by all of them, is not. The
  // functions as checked at construction, never read from the caller's codec object again.
  readonly codec: CheckpointCodec<any>
  /** The backend's `capabilities.maxStateBytes`, as checked at construction. */
  readonly maxStateBytes: number
  readonly events: LeaserEmitter
  /** The store side stopped: no call of this lease goes out any more. */
  readonly onEnd: (lease: Lease<any>) => void
}

/**
 * @internal Lets the Leaser end a lease locally with reason `'closed'` without a public method. The
 * store still holds it (and renewals go on) until `release()` or `abandon()`.
 */
export const closeLease: unique symbol = Symbol('worklease.closeLease')

/**
 * @internal Lets the Leaser ask for a renew now: a lease adopted from a `LEASE_HELD` that named us
 * (an earlier acquire's reply was lost) is confirmed by the store at once, not at the next interval.
 */
export const confirmLease: unique symbol = Symbol('worklease.confirmLease')

/**
 * @internal Lets the Leaser ask, right after making a lease, whether it is still live without
 * reading the clocks again: the constructor just checked them.
 */
export const storeSideLive: unique symbol = Symbol('worklease.storeSideLive')

/**
 * @internal Whether the store confirmed this lease's release: `release()` also settles quietly when an
 * `abandon()` (`leaser.close()` giving up at its timeout) stopped it while a call was out, which may or
 * may not land. A pool reports a unit released only on this.
 */
export const releaseConfirmed: unique symbol = Symbol('worklease.releaseConfirmed')

/**
 * @internal How the previous lease ended: the acquire's read if it made one, else one read of the store
 * while the store side is still ours, also after a local end by `leaser.close()` (which a user's
 * `readCheckpoint()` refuses). `undefined` when it cannot be read.
 */
export const readHandoff: unique symbol = Symbol('worklease.readHandoff')

/**
 * @internal Until when a Leaser's `run` (or a pool's unit) works under this lease: its callback settled,
 * then the release. `leaser.close()` waits for it instead of releasing the lease under the callback.
 * Kept on the lease, not in a Map of the Leaser's: see HeldLeases for what such a Map's churn costs.
 */
export const workDone: unique symbol = Symbol('worklease.workDone')

type Op = 'renew' | 'checkpoint' | 'release' | 'readCheckpoint'

/** Where every lease's op queue starts, and what an op with nothing to do returns: one for all. */
const SETTLED: Promise<void> = Promise.resolve()
const NO_STATE_CLEAN: CheckpointRead = Object.freeze({ state: null, cleanHandoff: true })
const NO_STATE_UNCLEAN: CheckpointRead = Object.freeze({ state: null, cleanHandoff: false })

/**
 * A held lease, returned by `leaser.acquire`. While held, it renews itself in the background; it
 * never re-acquires. When the lease is lost, `signal` aborts with a {@link LeaseLostError} and every
 * further call rejects with it.
 *
 * ```ts
 * await using lease = await leaser.acquire('invoice-42')
 * const { state } = await lease.readCheckpoint()
 * for (const step of stepsAfter(state)) {
 *   await step.run({ signal: lease.signal, fencingToken: lease.fencingToken })
 *   await lease.checkpoint(step.encode())
 * }
 * // released at scope exit
 * ```
 */
export class Lease<S = Uint8Array> implements AsyncDisposable, ScheduledLease, WatchedLease {
  /** The unit of work this lease covers. */
  readonly workId: string
  /** The backend's record: pass `record.fencingToken` to downstream writes. */
  readonly record: LeaseRecord

  readonly #ctx: LeaseContext
  /**
   * What the user sees: aborted the moment the lease ends locally, before the store hears of it.
   * Made when `signal` is first read: an AbortSignal and its abort cost microseconds each, which a
   * lease nobody watches (acquire, a few calls, release) need not pay.
   */
  #controller: AbortController | undefined
  /** Aborted with the user's side: wakes a checkpoint or read waiting to retry. */
  readonly #localEnd = new Cancel()
  /** Aborted when the store side stops (loss, release done, abandon): abandons calls, clears timers. */
  readonly #stop = new Cancel()
  /** Aborted when a release is requested: renewals stop, and a renew waiting to retry wakes up. */
  readonly #releaseRequests = new Cancel()
  // Whether #stop and #releaseRequests were aborted, kept on the lease itself: both are read on every
  // renewal, and at 100,000 leases each object touched is a cache miss (3.9 -> 3.3 us per renewal).
  #halted = false
  #releaseRequested = false
  readonly #deadline: LocalDeadline
  /**
   * How the lease ended for the user: its error, or the reason of a release or abandon whose
   * {@link LeaseEndedError} nobody asked for yet (built by {@link #ended} on first use).
   */
  #end: LeaseLostError | LeaseEndedError | 'released' | 'abandoned' | undefined
  /** A loss is being declared: its local end (and the listeners it runs) comes before its halt. */
  #losing = false
  #loss: LeaseLostError | undefined
  #releasing: Promise<void> | undefined
  #lastTransient: unknown
  /** Checkpoints, reads and the release, one at a time. Renewals run beside it, never behind it. */
  #queue: Promise<unknown> = SETTLED
  /** Ops in {@link #queue} not yet settled: with none, an op enqueued now runs a microtask later. */
  #queued = 0
  /** A renew on its own (no schedule), or a batched renewal's backoff before it asks again. */
  #renewing: Promise<void> | undefined
  #renewTimer: unknown
  /** Batched renewals: the schedule's slot this lease waits in, while it waits. */
  #renewSlot: number | undefined
  /** Batched renewals: sent in a batch whose outcome has not come back. */
  #inBatch = false
  /** The release waiting for that outcome: it never races a renewal in flight. */
  #batchSettled: (() => void) | undefined
  /** Batched renewals: failed attempts since the last success, for the backoff. */
  #renewFailures = 0
  /** The deadlines' slot this lease waits in, while its deadline is more than a window away. */
  #watchSlot: number | undefined
  /** Its own timer for the exact moment, once the deadline is less than a window away. */
  #watchdog: unknown
  /**
   * The checkpoint the acquire brought back, kept for the first read: while the lease is held no other
   * holder can write one, so it is what a read would return until this lease checkpoints.
   */
  #acquiredCheckpoint: CheckpointRead | undefined
  /** The acquire's `cleanHandoff`, kept after the read above has handed its checkpoint out. */
  readonly #handoffAtAcquire: boolean | undefined
  #releaseConfirmed = false
  #workDone: Promise<void> | undefined

  // An accessor over a private field, not a field: an own symbol property would show in every
  // `console.log(lease)` and spread.
  /** @internal See {@link workDone}. */
  get [workDone](): Promise<void> | undefined {
    return this.#workDone
  }

  set [workDone](done: Promise<void> | undefined) {
    this.#workDone = done
  }

  /** @internal Use `leaser.acquire`. */
  constructor(
    ctx: LeaseContext,
    record: LeaseRecord,
    acquireStartedAt: Instant,
    checkpoint?: CheckpointRead,
  ) {
    this.#ctx = ctx
    this.workId = record.workId
    this.record = record
    // Most leases start from no state; those share one object each way, not one per lease (100,000
    // leases that never read would otherwise each keep their own until they end).
    this.#acquiredCheckpoint =
      checkpoint?.state === null ? (checkpoint.cleanHandoff ? NO_STATE_CLEAN : NO_STATE_UNCLEAN) : checkpoint
    this.#handoffAtAcquire = checkpoint?.cleanHandoff
    this.#deadline = new LocalDeadline(ctx.timers, ctx.ttlMs - ctx.safetyMarginMs, acquireStartedAt)
    // The clocks read once for both (65-75 ns a read on the machine this was measured on; an acquire
    // and release read them 13 times, now 7). A reply that arrived after the whole ttl (a paused
    // process) proves nothing about now: such a lease is lost at once and never armed.
    const now = instant(ctx.timers)
    if (!this.#live(now)) return
    try {
      this.#arm(now)
    } catch (error) {
      // Timers that refuse: the Leaser lets the store's lease go as an orphan, and nobody holds this
      // one. What was armed before the throw is taken back, or its deadline would report lost a lease
      // never handed out. Not halted through #halt: that ends it for the Leaser too, which retires
      // its token, and the orphan's release would then be skipped as a token handed out.
      this.#disarm()
      this.#halted = true
      throw error
    }
  }

  /** The fencing token: strictly greater than every earlier holder's. */
  get fencingToken(): bigint {
    return this.record.fencingToken
  }

  /**
   * Aborts when the lease is lost (reason: a {@link LeaseLostError}) or ended by `release`,
   * `abandon` or `leaser.close()`: always before the store lets a successor in. Reading it first
   * checks the local deadline, so right after a long process pause it is already aborted, before any
   * timer had a chance to run.
   */
  get signal(): AbortSignal {
    this.#checkDeadline()
    if (this.#controller === undefined) {
      this.#controller = sharedAbortController()
      if (this.#end !== undefined) this.#controller.abort(this.#ended)
    }
    return this.#controller.signal
  }

  /** Whether the lease is still held (checks the local deadline now); false from the moment it ends. */
  get held(): boolean {
    return this.#checkDeadline()
  }

  /**
   * The loss, if the lease was taken away (`'fenced'`, `'expired'`, `'deadline'`, `'rejected'` or
   * `'closed'`); `undefined` while held and after your own `release()` or `abandon()`, unless the lease
   * was past its local deadline (a pause) when you called them: lost then, for the deadline.
   */
  get lossError(): LeaseLostError | undefined {
    this.#checkDeadline()
    return this.#loss
  }

  /** Milliseconds until the local deadline (0 once no longer held). */
  remainingMs(): number {
    if (!this.#checkDeadline()) return 0
    return this.#deadline.remaining()
  }

  /**
   * Throws the {@link LeaseLostError} if the lease is no longer held. Call it right before an
   * irreversible step that the fencing token does not protect.
   */
  throwIfLost(): void {
    if (!this.#checkDeadline()) throw this.#ended
  }

  /**
   * Stores `state` and extends the lease (a checkpoint counts as a renewal). Checkpoints and reads
   * run one at a time; renewals go on beside them, so a slow checkpoint never starves the lease. Each
   * attempt is bounded by `checkpointTimeoutMs`; transient store errors and timeouts are retried with
   * the same checkpoint sequence (so an abandoned attempt that lands late can never overwrite a later
   * checkpoint), for at most `ttlMs - safetyMarginMs` from the first attempt and never past the local
   * deadline. `state` is copied at once, so the caller may reuse its buffer as soon as this returns.
   * Keeps the process alive until it settles.
   * @throws `InvalidArgumentError` for a state the backend (or `jsonCodec`) cannot take, and your
   * codec's own error if its `encode` throws: before any store call, the lease unaffected.
   * @throws the last store error when the store kept failing checkpoints for that long while the
   * lease itself stayed renewed (it is still held; the state may or may not be stored).
   * @throws {@link LeaseLostError} if the lease is or becomes lost (or was released). A checkpoint
   * already sent when the loss was declared may still be stored (and extend the lease): the outcome is
   * indeterminate, like a lost reply. One still queued then is never sent.
   */
  checkpoint(state: S): Promise<void> {
    // The end first: a lease released or lost says so, not that the state it was handed was bad.
    if (!this.#checkDeadline()) return Promise.reject(this.#ended)
    // Encoded and copied now: the op may wait behind a renew, and the caller may reuse its buffer
    // (or change its object) meanwhile. validateState copies the bytes. A failure here is a
    // rejection like any other: a caller that only attaches `.catch` must see it too.
    let copy: Uint8Array
    try {
      copy = validateState(this.#ctx.codec.encode(state), this.#ctx.maxStateBytes)
    } catch (error) {
      return Promise.reject(error)
    }
    return this.#enqueue(() => this.#checkpointOp(copy))
  }

  /**
   * The last state any holder of this workId checkpointed (`null` if none) and whether the previous
   * holder released cleanly (`false` after a crash or an abandoned lease). Retried like
   * {@link checkpoint}, each attempt bounded by `callTimeoutMs`. Keeps the process alive until it
   * settles.
   *
   * The first call, if the lease has not checkpointed yet, is answered without a round trip from what
   * the acquire read (`prefetchCheckpoint`, on a backend with `acquireWithCheckpoint`): nobody else
   * can write a checkpoint while the lease is held. So it is as of the acquire: a lease revoked since
   * is noticed at its next renewal or checkpoint, not by this read.
   * @throws {@link LeaseLostError} if the lease is or becomes lost (or was released).
   * @throws the last store error when reads kept failing for `ttlMs - safetyMarginMs`.
   */
  readCheckpoint(): Promise<LeaseCheckpoint<S>> {
    if (!this.#checkDeadline()) return Promise.reject(this.#ended)
    return this.#enqueue(async () => {
      const { state: bytes, cleanHandoff } = await this.#readOp()
      let state: S | null = null
      if (bytes !== null) {
        try {
          state = this.#ctx.codec.decode(bytes)
        } catch (error) {
          throw new TypeError(`the checkpoint of ${JSON.stringify(this.workId)} could not be decoded`, {
            cause: error,
          })
        }
      }
      return { state, bytes, cleanHandoff }
    })
  }

  /**
   * Ends the lease: locally first (`signal` aborts and `held` turns false at once, so work watching
   * them stops before anyone else can get in), then in the store, after any in-flight renew or
   * checkpoint settles (never racing it; renewals go on while a checkpoint is out, and a renew
   * waiting to retry gives up once the release is next). Transient store errors are retried until the
   * local deadline. Keeps the process alive until it settles.
   * Idempotent; never rejects: if the lease was lost (before or during the release), `lossError` says
   * so and the `lost` event was emitted. A `FENCED` to a retry after an attempt whose outcome is
   * unknown (its reply lost) is settled with one `list` of the workId: the record released under this
   * lease's holderId and token means the earlier attempt landed (released); anything else (revoked,
   * taken by a successor) is the loss a `FENCED` always is. Without `list`, or if that listing fails,
   * it counts as released, on the guess that the earlier attempt landed: wrong after a `revoke` or a
   * takeover by a successor whose clock runs ahead, which then pass for a clean release.
   */
  release(): Promise<void> {
    if (this.#releasing) return this.#releasing
    const reason = typeof this.#end === 'object' && this.#end.reason === 'closed' ? 'closed' : 'released'
    // A pause may have carried the lease past its deadline before this call: that loss comes first,
    // or the signal would say "released" while lossError says "deadline". With nothing queued, the
    // release's own check and start a microtask later share this reading.
    const asked = this.#end === undefined ? instant(this.#ctx.timers) : undefined
    if (asked !== undefined) this.#live(asked)
    const now = this.#queued === 0 ? asked : undefined
    this.#endLocally('released')
    // Keeps the process alive (#enqueue): the runner's timers are unref'd, so a process with nothing
    // else to do would exit in the middle of `await lease.release()` and leave the lease to expire.
    // Bounded: the release gives up at the local deadline.
    this.#releasing = this.#enqueue(() => {
      // Renewals stop only now: behind a checkpoint still in flight (up to checkpointTimeoutMs, which
      // may exceed what is left of the ttl) they keep the lease, or it is lost with no release sent.
      this.#requestRelease()
      this.#unschedule()
      // Not an async function: most releases wait for no renewal, and one would cost them a promise.
      const renewal = this.#renewalInFlight()
      return renewal ? renewal.then(() => this.#releaseOp(reason)) : this.#releaseOp(reason, now)
    })
    return this.#releasing
  }

  /**
   * Stops renewing without releasing: the lease expires on its own and the successor sees
   * `cleanHandoff: false`. Use it when the work failed in a way the successor should know about.
   * A lease already past its local deadline (a pause) is reported lost (`lossError`, the `lost`
   * event), not abandoned.
   */
  abandon(): void {
    // Lost already (a pause past the deadline), it is reported as lost, not as abandoned; so is one
    // being lost now, from an abort listener of `signal` (the loss ends it locally before it halts).
    if (this.#end === undefined) this.#live()
    if (this.#halted || this.#losing) return
    this.#requestRelease()
    this.#endLocally('abandoned')
    this.#halt()
    if (this.#ctx.events.wants('released')) {
      this.#ctx.events.emit('released', { ...this.#base(), clean: false, reason: 'abandoned' })
    }
  }

  /** Same as {@link release}, for `await using lease = await leaser.acquire(...)`. */
  [Symbol.asyncDispose](): Promise<void> {
    return this.release()
  }

  /** @internal */
  [confirmLease](): void {
    const { schedule } = this.#ctx
    if (schedule) {
      if (this.#live() && !this.#releaseRequested) {
        this.#renewSlot = schedule.soon(this, this.#renewSlot)
      }
      return
    }
    this.#ctx.timers.clearTimeout(this.#renewTimer)
    this.#onRenewTimer()
  }

  /** @internal See {@link readHandoff}. */
  [readHandoff](): Promise<boolean | undefined> {
    if (this.#handoffAtAcquire !== undefined) return Promise.resolve(this.#handoffAtAcquire)
    const { backend, callSignals, retry } = this.#ctx
    return this.#enqueue(async () => {
      // Retried as readCheckpoint() retries a store failure: one would send a clean unit back unclean.
      for (let attempt = 0; attempt < retry.maxAttempts && this.#live(); attempt++) {
        try {
          const read = await this.#call(
            (signal) => backend.readCheckpoint(this.record, { signal }),
            callSignals,
          )
          return this.#live() ? read.cleanHandoff : undefined
        } catch (error) {
          if (isWorkleaseError(error)) return undefined
          await this.#backoff(attempt).catch(() => undefined)
        }
      }
      return undefined
    })
  }

  /** @internal See {@link releaseConfirmed}. */
  get [releaseConfirmed](): boolean {
    return this.#releaseConfirmed
  }

  /** @internal Whether the store side is still ours, as last checked (no clock read). */
  get [storeSideLive](): boolean {
    return !this.#halted
  }

  /** @internal */
  get [renewalSlot](): number | undefined {
    return this.#renewSlot
  }

  /** @internal */
  get [deadlineSlot](): number | undefined {
    return this.#watchSlot
  }

  /** @internal */
  [startRenewal](slot: number, now: Instant): boolean {
    if (slot !== this.#renewSlot) return false
    this.#renewSlot = undefined
    // Renewals go on after a local end by close(): the store keeps the lease until the callback settled.
    if (!this.#live(now) || this.#releaseRequested || this.#inBatch || this.#renewing) return false
    this.#inBatch = true
    return true
  }

  /** @internal */
  [finishRenewal](sentAt: Instant, receivedAt: Instant, error?: unknown): void {
    this.#inBatch = false
    try {
      if (error === undefined) this.#renewed(sentAt, receivedAt)
      else this.#renewFailed(error)
    } finally {
      const settled = this.#batchSettled
      this.#batchSettled = undefined
      settled?.()
    }
  }

  /** @internal */
  [closeLease](): void {
    // Lost already (a pause past the deadline), it stays lost for that reason, not for the close.
    if (this.#end !== undefined || !this.#live()) return
    const error = this.#endError('closed')
    this.#loss = error
    this.#endLocally(error)
  }

  #base() {
    return { workId: this.workId, holderId: this.record.holderId, fencingToken: this.record.fencingToken }
  }

  #endError(reason: LeaseLossReason, cause?: unknown): LeaseLostError {
    return new LeaseLostError(reason, { workId: this.workId, fencingToken: this.record.fencingToken, cause })
  }

  /** The error the lease ended with; a {@link LeaseEndedError} is built the first time it is needed. */
  get #ended(): LeaseLostError | LeaseEndedError | undefined {
    const end = this.#end
    if (typeof end !== 'string') return end
    const error = new LeaseEndedError(end, { workId: this.workId, fencingToken: this.record.fencingToken })
    this.#end = error
    return error
  }

  /** Whether still held for the user: not ended, and the store side still live. */
  #checkDeadline(now?: Instant): boolean {
    return this.#live(now) && this.#end === undefined
  }

  /**
   * Whether the store side is still ours to use (also after a local end, until the release or abandon
   * stopped it); declares the loss once the local deadline passed.
   */
  #live(now?: Instant): boolean {
    if (this.#halted) return false
    if (this.#deadline.remaining(now) <= 0) {
      this.#lose('deadline', this.#lastTransient)
      return false
    }
    return true
  }

  #lose(reason: LeaseLossReason, cause: unknown): void {
    if (this.#halted || this.#losing) return
    // Set first: the local end runs the user's abort listeners, which may abandon or release.
    this.#losing = true
    const error = this.#endError(reason, cause)
    this.#loss ??= error
    this.#endLocally(error)
    this.#halt()
    this.#ctx.events.emit('lost', { ...this.#base(), reason, error })
  }

  /** The user's side: `held` turns false and `signal` aborts. The store side may go on. */
  #endLocally(end: LeaseLostError | 'released' | 'abandoned'): void {
    if (this.#end !== undefined) return
    this.#end = end
    this.#localEnd.abort()
    this.#controller?.abort(this.#ended)
  }

  /** Renewals stop for good; one waiting out a backoff wakes (the release makes its own attempts). */
  #requestRelease(): void {
    this.#releaseRequested = true
    this.#releaseRequests.abort()
  }

  /** The store side: no more renewals, calls in flight abandoned, timers cleared. */
  #halt(): void {
    this.#disarm()
    this.#halted = true
    this.#stop.abort()
    // A release waiting for a batch stops waiting: the batch may be out until its call timeout, far
    // past the deadline at which the release gives up (a renew of the lease's own is abandoned here).
    const batchSettled = this.#batchSettled
    this.#batchSettled = undefined
    batchSettled?.()
    this.#ctx.onEnd(this)
  }

  /** Nothing of this lease's is armed any more: no renewal, no watch of its deadline. */
  #disarm(): void {
    this.#unschedule()
    if (this.#watchdog !== undefined) this.#ctx.timers.clearTimeout(this.#watchdog)
    this.#watchdog = undefined
    const watchSlot = this.#watchSlot
    this.#watchSlot = undefined
    if (watchSlot !== undefined) this.#ctx.deadlines.leave(watchSlot)
  }

  /** A renew or checkpoint that started at `start` succeeded: the backend's expiry is >= start + ttl. */
  #extend(start: Instant): void {
    if (!this.#deadline.extend(start)) return
    this.#lastTransient = undefined
    this.#arm()
  }

  #arm(now?: Instant): void {
    const { timers, schedule } = this.#ctx
    if (!schedule && this.#renewTimer !== undefined) {
      timers.clearTimeout(this.#renewTimer)
      this.#renewTimer = undefined
    }
    if (this.#halted) return
    // A watch for an earlier deadline is kept: it wakes early and files the lease again, once a ttl
    // instead of on every renewal.
    if (this.#watchSlot === undefined && this.#watchdog === undefined) this.#watch(now)
    if (this.#releaseRequested) return
    // Jitter only shortens the interval, so the configured one stays an upper bound.
    const dueAt =
      this.#deadline.lastSuccessStart +
      this.#ctx.renewIntervalMs * (1 - this.#ctx.renewJitter * this.#ctx.random())
    if (schedule) {
      // Sent with its slot of the schedule, never after dueAt; an older entry is left to be skipped.
      this.#renewSlot = schedule.at(this, dueAt, this.#renewSlot)
      return
    }
    this.#renewTimer = timers.setTimeout(() => this.#onRenewTimer(), dueAt - timers.now())
  }

  /** No renewal is to be sent any more: the timer is cleared, or the schedule's entry left behind. */
  #unschedule(): void {
    if (this.#renewTimer !== undefined) this.#ctx.timers.clearTimeout(this.#renewTimer)
    this.#renewTimer = undefined
    const renewSlot = this.#renewSlot
    this.#renewSlot = undefined
    if (renewSlot !== undefined) this.#ctx.schedule?.leave(renewSlot)
  }

  /**
   * Settles when no renewal of this lease is in flight; the release waits for that. Not once the lease
   * was halted (lost): a batch may be out until its call timeout, and #halt wakes only a release
   * already waiting, so one asked for after it would wait that long.
   */
  #renewalInFlight(): Promise<void> | undefined {
    if (this.#renewing) return this.#renewing
    if (!this.#inBatch || this.#halted) return undefined
    return new Promise((resolve) => {
      this.#batchSettled = resolve
    })
  }

  /**
   * Wakes the lease at its local deadline: in the Leaser's deadline wheel while that is more than a
   * window away, else on a timer of its own for the exact moment.
   */
  #watch(now: Instant = instant(this.#ctx.timers)): void {
    const { deadlines, timers } = this.#ctx
    const remaining = this.#deadline.remaining(now)
    if (remaining > deadlines.windowMs) this.#watchSlot = deadlines.at(this, now.mono + remaining)
    else this.#watchdog = timers.setTimeout(() => this.#onWatchdog(), remaining)
  }

  /** @internal */
  [deadlineDue](slot: number, now: Instant): void {
    if (slot !== this.#watchSlot) return
    this.#watchSlot = undefined
    // Woken early (renewed since, or the wheel's timer ran ahead of the clock): watch again.
    if (this.#live(now)) this.#watch(now)
  }

  #onWatchdog(): void {
    this.#watchdog = undefined
    if (this.#live()) this.#watch()
  }

  #onRenewTimer(): void {
    this.#renewTimer = undefined
    // Renewals go on after a local end by close(): the store keeps the lease until the callback settled.
    if (!this.#live() || this.#releaseRequested || this.#renewing) return
    // Not queued behind checkpoints: the store keeps the later expiry (max) and orders checkpoints by
    // sequence, so a renew may overlap a checkpoint, and one hung checkpoint cannot cost the lease.
    this.#renewing = this.#renewOp().finally(() => {
      this.#renewing = undefined
    })
  }

  /**
   * Runs `op` after every earlier op settled: checkpoints, reads and the release never overlap. Each
   * is work the caller awaits and keeps the process alive until it settles, unlike the background
   * renewals (a held lease alone never keeps a finished process up).
   */
  #enqueue<T>(op: () => Promise<T>): Promise<T> {
    const keptAlive = keepProcessAlive()
    this.#queued++
    const letGo = () => {
      this.#queued--
      keptAlive()
    }
    // Let go from a reaction on the op's own promise, not on the one the caller holds: a handler
    // there would make a checkpoint nobody awaits fail without an unhandled rejection. (An async
    // wrapper letting go in its `finally` cost two promises more.)
    const run = () => {
      let done: Promise<T>
      try {
        done = op()
      } catch (error) {
        letGo()
        throw error
      }
      done.then(letGo, letGo)
      return done
    }
    // Chained as it is: `then(run, run)` takes a rejection as a turn like any other, and the caller
    // holds this very promise (a `.catch` and a `.finally` here made four promises more an op).
    const next = this.#queue.then(run, run)
    this.#queue = next
    return next
  }

  /**
   * One backend call, abandoned when the store side stops or after the timeout of `signals`. The
   * backend's signal is shared with calls started close together and tells it only of the timeout:
   * the runner itself waits on `cancel`, which ends with the lease too.
   */
  #call<T>(
    call: (signal: AbortSignal) => Promise<T>,
    signals: CallSignals,
    now: number = this.#ctx.timers.now(),
  ): Promise<T> {
    const slice = signals.take(now)
    const pending = invoke(() => call(slice.controller.signal))
    return raceWithin(pending, this.#stop, signals.timeouts, {
      startedAt: now,
      onSettled: () => signals.settled(slice),
    })
  }

  /**
   * Waits before the next attempt: backoff, but never past `limitMs`, the local deadline or an abort
   * of `wake`.
   */
  #backoff(attempt: number, wake?: Abortable, limitMs = Number.POSITIVE_INFINITY): Promise<void> {
    const { timers, retry, random } = this.#ctx
    // At most half the time left, so attempts get denser (not sparser) as the deadline nears.
    const ms = Math.min(backoffDelay(retry, attempt, random), this.#deadline.remaining() / 2, limitMs)
    return sleep(timers, ms, this.#stop, wake)
  }

  /**
   * {@link #backoff} for a loop of retries that must not reject (the renewals, the release): whether
   * the wait could be armed at all. Timers that throw as it is (injected ones may) cost that wait:
   * rejected, the renewals stopped for good with an unhandled rejection and release() rejected,
   * never to retry. Twice in a row, the loop stops (each caller says what that leaves): retried at
   * once every time, it would call a failing store in a tight loop until the deadline.
   */
  #retryWait(attempt: number, unarmed: { count: number }, wake?: Abortable): Promise<boolean> {
    return this.#backoff(attempt, wake).then(
      () => {
        unarmed.count = 0
        return true
      },
      () => ++unarmed.count < 2,
    )
  }

  #transient(op: Op, error: unknown, attempt: number): void {
    this.#lastTransient = error
    const failure = { ...this.#base(), error, attempt, remainingMs: Math.max(0, this.#deadline.remaining()) }
    if (op === 'renew' || op === 'checkpoint') this.#ctx.events.emit('renewFailed', { ...failure, op })
    else this.#ctx.events.emit('callFailed', { ...failure, op })
  }

  /**
   * Handles a lease outcome from the backend; returns false for a transient store error. A
   * `LEASER_CLOSED` is no outcome: it is the reason `close()` aborted the call's signal with (a
   * driver rejects with it), and says nothing of what the store did.
   */
  #outcome(error: unknown): boolean {
    if (isFencedError(error)) this.#lose('fenced', error)
    else if (isLeaseExpiredError(error)) this.#lose('expired', error)
    else if (isWorkleaseError(error) && !isLeaserClosedError(error)) this.#lose('rejected', error)
    else return false
    return true
  }

  /** One renew of its own (the backend has no renewMany), retried until it succeeds or the lease ends. */
  async #renewOp(): Promise<void> {
    const { backend, ttlMs, timers, callSignals } = this.#ctx
    const unarmed = { count: 0 }
    for (let attempt = 0; ; attempt++) {
      // One reading for the check and the call's start: each costs ~70 ns, a tenth of a renew here.
      const start = instant(timers)
      if (!this.#live(start) || this.#releaseRequested) return
      try {
        await this.#call((signal) => backend.renew(this.record, ttlMs, { signal }), callSignals, start.mono)
      } catch (error) {
        if (!this.#live() || this.#outcome(error)) return
        // The token never changes on renew, so retrying after a lost reply is safe.
        this.#transient('renew', error, attempt + 1)
        // The release waiting for us makes its own attempts; don't delay it, neither now nor when
        // it is requested during the backoff.
        if (this.#releaseRequested) return
        // No wait to be had: the renewals stop, and the deadline reports the loss.
        if (!(await this.#retryWait(attempt, unarmed, this.#releaseRequests.signal))) return
        continue
      }
      this.#renewed(start)
      return
    }
  }

  /** A renew that started (or whose batch was sent) at `start` succeeded. */
  /** A renew that started at `start` succeeded; its reply came at `receivedAt` (default: now). */
  #renewed(start: Instant, receivedAt?: Instant): void {
    // A reply that arrives after the deadline proves nothing about now: the deadline check wins.
    if (!this.#live(receivedAt)) return
    this.#renewFailures = 0
    this.#extend(start)
    // Overtaken by a checkpoint that started later, this renewal moved nothing; the renewal that
    // checkpoint scheduled may have fallen due while this one was out, and been skipped for it.
    if (this.#renewSlot === undefined && this.#renewTimer === undefined) this.#arm()
    if (this.#ctx.events.wants('renewed')) this.#emitRenewed('renew')
  }

  /** Built field by field: a spread of {@link #base} costs more than the rest of a batched renewal. */
  #emitRenewed(op: 'renew' | 'checkpoint'): void {
    // Read first: it checks the deadline again, and one that passed since the reply was judged (a
    // listener of an earlier lease of the batch blocked) ends the lease here, reported lost only.
    const remainingMs = this.remainingMs()
    if (this.#halted) return
    const { workId, holderId, fencingToken } = this.record
    this.#ctx.events.emit('renewed', { workId, holderId, fencingToken, op, remainingMs })
  }

  /**
   * A batched renewal failed: a lease outcome ends the lease; a store failure is retried after a
   * backoff, with the next batch (the token never changes on renew, so a retry after a lost reply is
   * safe). The release waiting for us makes its own attempts: no retry once it is requested.
   */
  #renewFailed(error: unknown): void {
    if (!this.#live() || this.#outcome(error)) return
    this.#transient('renew', error, ++this.#renewFailures)
    if (this.#releaseRequested) return
    const next = () => {
      this.#renewing = undefined
      try {
        if (this.#live() && !this.#releaseRequested) {
          this.#renewSlot = this.#ctx.schedule!.soon(this, this.#renewSlot)
        }
      } catch (error) {
        throwLater(error)
      }
    }
    // Slept, or the injected timers threw as the sleep was armed: renewed again either way. Left
    // set, #renewing kept the lease out of every batch until its deadline.
    this.#renewing = this.#backoff(this.#renewFailures - 1, this.#releaseRequests.signal).then(next, next)
  }

  async #checkpointOp(state: Uint8Array): Promise<void> {
    const { backend, ttlMs, timers, checkpointSignals } = this.#ctx
    // Once sent, it may be stored whatever the reply says: the acquire's read is no longer the last.
    this.#acquiredCheckpoint = undefined
    // One sequence for every attempt: the store keeps the largest, so a retry of this checkpoint (or
    // an abandoned attempt landing late) can never replace a checkpoint made after it.
    const sequence = nextCheckpointSequence()
    const giveUpAt = this.#opBudget()
    for (let attempt = 0; ; attempt++) {
      const start = instant(timers)
      if (!this.#checkDeadline(start)) throw this.#ended
      try {
        await this.#call(
          (signal) => backend.checkpoint(this.record, state, ttlMs, { signal, sequence }),
          checkpointSignals,
          start.mono,
        )
      } catch (error) {
        await this.#afterFailedCall('checkpoint', error, attempt, giveUpAt)
        continue
      }
      // Stored, even if the lease ended locally meanwhile (a release or close): say so. Only a
      // reply after the local deadline proves nothing about now.
      if (!this.#live()) throw this.#ended
      this.#extend(start)
      if (this.#ctx.events.wants('renewed')) this.#emitRenewed('checkpoint')
      return
    }
  }

  /**
   * Until when a checkpoint or read retries: one lease lifetime from its first attempt. Renewals keep
   * the local deadline moving, so without this a store that answers renews but not checkpoints would
   * keep the caller waiting forever.
   */
  #opBudget(): number {
    return this.#ctx.timers.now() + this.#ctx.ttlMs - this.#ctx.safetyMarginMs
  }

  /**
   * After a failed checkpoint or read: FENCED ends the lease, another lease outcome is the caller's,
   * and a store error is retried after a backoff, until `giveUpAt`, the local deadline or a local end.
   */
  async #afterFailedCall(
    op: 'checkpoint' | 'readCheckpoint',
    error: unknown,
    attempt: number,
    giveUpAt: number,
  ): Promise<void> {
    if (!this.#checkDeadline()) throw this.#ended
    if (isFencedError(error)) {
      this.#lose('fenced', error)
      throw this.#ended
    }
    if (isWorkleaseError(error)) throw error
    this.#transient(op, error, attempt + 1)
    const left = giveUpAt - this.#ctx.timers.now()
    if (left <= 0) throw error
    await this.#backoff(attempt, this.#localEnd, left)
    if (this.#ctx.timers.now() >= giveUpAt && this.#checkDeadline()) throw error
  }

  async #readOp(): Promise<CheckpointRead> {
    const acquired = this.#acquiredCheckpoint
    if (acquired !== undefined) {
      // Handed out once (the bytes are the caller's from then on); later reads ask the store.
      this.#acquiredCheckpoint = undefined
      if (!this.#checkDeadline()) throw this.#ended
      return acquired
    }
    const { backend, callSignals } = this.#ctx
    const giveUpAt = this.#opBudget()
    for (let attempt = 0; ; attempt++) {
      if (!this.#checkDeadline()) throw this.#ended
      try {
        const read = await this.#call(
          (signal) => backend.readCheckpoint(this.record, { signal }),
          callSignals,
        )
        if (!this.#live()) throw this.#ended
        return read
      } catch (error) {
        await this.#afterFailedCall('readCheckpoint', error, attempt, giveUpAt)
      }
    }
  }

  /**
   * The release's first attempt; a failed one goes on in {@link #releaseRetries}. Not an async
   * function: nearly every release lands at once, and one would cost it two promises more.
   */
  #releaseOp(reason: 'released' | 'closed', asked?: Instant): Promise<void> {
    const now = asked ?? instant(this.#ctx.timers)
    if (!this.#live(now)) return SETTLED
    let sent: Promise<void>
    try {
      sent = this.#sendRelease(now.mono)
    } catch (error) {
      // The injected timers threw as the call's timeout was armed: a failed attempt like any other.
      return this.#releaseRetries(reason, error)
    }
    return sent.then(
      () => this.#released(reason),
      (error: unknown) => this.#releaseRetries(reason, error),
    )
  }

  async #releaseRetries(reason: 'released' | 'closed', firstError: unknown): Promise<void> {
    // Set once an attempt's outcome is unknown: it may have landed, so a later FENCED may be our own
    // release rather than a takeover (see #releaseLanded).
    let mayHaveLanded = false
    let error = firstError
    const unarmed = { count: 0 }
    for (let attempt = 0; ; attempt++) {
      if (!this.#live()) return
      if (isFencedError(error) && mayHaveLanded) {
        const landed = await this.#releaseLanded()
        if (!this.#live()) return
        if (landed !== false) break
      }
      if (this.#outcome(error)) return
      mayHaveLanded = true
      this.#transient('release', error, attempt + 1)
      // No wait to be had: lost now, as a release failing until the deadline is (the store keeps the
      // lease until then), so release() resolves with the loss said, not with nothing said yet.
      if (!(await this.#retryWait(attempt, unarmed))) {
        this.#lose('deadline', error)
        return
      }
      const now = instant(this.#ctx.timers)
      if (!this.#live(now)) return
      try {
        await this.#sendRelease(now.mono)
        break
      } catch (next) {
        error = next
      }
    }
    this.#released(reason)
  }

  #sendRelease(startedAt: number): Promise<void> {
    const { backend, callSignals } = this.#ctx
    return this.#call((signal) => backend.release(this.record, { signal }), callSignals, startedAt)
  }

  /** The store confirmed the release: the store side stops. */
  #released(reason: 'released' | 'closed'): void {
    this.#releaseConfirmed = true
    this.#halt()
    if (this.#ctx.events.wants('released')) {
      this.#ctx.events.emit('released', { ...this.#base(), clean: true, reason })
    }
  }

  /**
   * After a release attempt whose outcome is unknown, a retry's `FENCED` says only that the record is
   * no longer ours to release. The attempt may have landed; but a `revoke`, or a successor whose
   * clock runs ahead, ends our lease before the local deadline just as well, and counted as our own
   * release that loss would pass for a clean one (`run` resolving with work that overlapped
   * another's). One listing tells them apart: our release leaves the record released under our
   * holderId and token. Resolves to `undefined` when it cannot tell (no `list`, the call failed, the
   * record not listed): the caller then keeps the old guess, that the attempt landed, since a store
   * failure is no lease outcome. A successor that took the lease after our release landed makes it
   * `false`: a loss we may not have had, the safe side of a verdict the listing cannot make.
   */
  async #releaseLanded(): Promise<boolean | undefined> {
    const { backend, callSignals } = this.#ctx
    const list = backend.list
    if (!backend.capabilities.list || typeof list !== 'function') return undefined
    const { workId, holderId, fencingToken } = this.record
    let listing: LeaseListing | undefined
    try {
      const page = await this.#call(
        (signal) => list.call(backend, { prefix: workId, limit: 1, signal }),
        callSignals,
      )
      listing = page.leases[0]
    } catch {
      return undefined
    }
    // The prefix also matches longer workIds, listed in its place if ours is not there.
    if (listing?.workId !== workId) return undefined
    return listing.released && listing.holderId === holderId && listing.fencingToken === fencingToken
  }
}
