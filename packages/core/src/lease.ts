import {
  type Backend,
  type CheckpointRead,
  isFencedError,
  isLeaseExpiredError,
  isWorkleaseError,
  type LeaseRecord,
  validateState,
} from '@worklease/spec'
import { keepProcessAlive, linkedController, raceSignal, sharedAbortController, sleep } from './abortable.js'
import { type LeaseEndReason, type LeaseLossReason, LeaseLostError } from './lease-lost-error.js'
import type { LeaserEmitter } from './leaser-events.js'
import { backoffDelay, type ResolvedRetryPolicy } from './retry-policy.js'
import { type Instant, instant, type Timers } from './timers.js'

/** @internal What a {@link Lease} shares with the Leaser that made it. */
export interface LeaseContext {
  readonly backend: Backend
  readonly ttlMs: number
  readonly safetyMarginMs: number
  readonly renewIntervalMs: number
  readonly renewJitter: number
  readonly callTimeoutMs: number
  readonly retry: ResolvedRetryPolicy
  readonly timers: Timers
  readonly random: () => number
  readonly events: LeaserEmitter
  readonly onEnd: (lease: Lease) => void
}

/** @internal Lets the Leaser release a lease with reason `'closed'` without a public method. */
export const closeLease: unique symbol = Symbol('worklease.closeLease')

type Op = 'renew' | 'checkpoint' | 'release' | 'readCheckpoint'

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
export class Lease implements AsyncDisposable {
  /** The unit of work this lease covers. */
  readonly workId: string
  /** The backend's record: pass `record.fencingToken` to downstream writes. */
  readonly record: LeaseRecord

  readonly #ctx: LeaseContext
  readonly #controller = sharedAbortController()
  /** Aborted when a release is requested: wakes a renew from its backoff so the release need not wait. */
  readonly #releaseRequests = new AbortController()
  #ended: LeaseLostError | undefined
  #loss: LeaseLostError | undefined
  #releaseRequested = false
  #releasing: Promise<void> | undefined
  /** Local deadline on the monotonic clock. */
  #deadline = 0
  /** Local deadline on the wall clock, which keeps moving while the host is suspended. */
  #wallDeadline = Number.POSITIVE_INFINITY
  #lastSuccessStart = 0
  #lastTransient: unknown
  #queue: Promise<unknown> = Promise.resolve()
  #renewQueued = false
  #renewTimer: unknown
  #watchdog: unknown

  /** @internal Use `leaser.acquire`. */
  constructor(ctx: LeaseContext, record: LeaseRecord, acquireStartedAt: Instant) {
    this.#ctx = ctx
    this.workId = record.workId
    this.record = record
    this.#extend(acquireStartedAt)
    // A reply that arrived after the whole ttl (a paused process) proves nothing about now.
    this.#checkDeadline()
  }

  /** The fencing token: strictly greater than every earlier holder's. */
  get fencingToken(): bigint {
    return this.record.fencingToken
  }

  /**
   * Aborts when the lease is lost (reason: a {@link LeaseLostError}) or ended by `release`,
   * `abandon` or `leaser.close()`. Reading it first checks the local deadline, so right after a long
   * process pause it is already aborted, before any timer had a chance to run.
   */
  get signal(): AbortSignal {
    this.#checkDeadline()
    return this.#controller.signal
  }

  /** Whether the lease is still held (checks the local deadline now). */
  get held(): boolean {
    return this.#checkDeadline()
  }

  /**
   * The loss, if the lease was taken away (`'fenced'`, `'expired'`, `'deadline'`, `'rejected'` or
   * `'closed'`); `undefined` while held and after your own `release()` or `abandon()`.
   */
  get lossError(): LeaseLostError | undefined {
    this.#checkDeadline()
    return this.#loss
  }

  /** Milliseconds until the local deadline (0 once no longer held). */
  remainingMs(): number {
    if (!this.#checkDeadline()) return 0
    return this.#remaining()
  }

  /**
   * Throws the {@link LeaseLostError} if the lease is no longer held. Call it right before an
   * irreversible step that the fencing token does not protect.
   */
  throwIfLost(): void {
    if (!this.#checkDeadline()) throw this.#ended
  }

  /**
   * Stores `state` and extends the lease (a checkpoint counts as a renewal). Queued behind any
   * in-flight renew; transient store errors are retried until the local deadline. `state` is copied
   * at once, so the caller may reuse its buffer as soon as this returns.
   * @throws `InvalidArgumentError` for a state the backend cannot take (the lease is unaffected).
   * @throws {@link LeaseLostError} if the lease is or becomes lost (or was released). A checkpoint
   * already sent when the loss was declared may still be stored (and extend the lease): the outcome is
   * indeterminate, like a lost reply. One still queued then is never sent.
   */
  checkpoint(state: Uint8Array): Promise<void> {
    validateState(state, this.#ctx.backend.capabilities.maxStateBytes)
    if (!this.#checkDeadline()) return Promise.reject(this.#ended)
    if (this.#releaseRequested) return Promise.reject(this.#endError('released'))
    // Copied now: the op may wait behind a renew, and the caller may reuse its buffer meanwhile.
    // (Not `state.slice()`: on a Buffer that is a view.)
    const copy = new Uint8Array(state)
    return this.#enqueue(() => this.#checkpointOp(copy))
  }

  /**
   * The last state any holder of this workId checkpointed (`null` if none) and whether the previous
   * holder released cleanly (`false` after a crash or an abandoned lease).
   * @throws {@link LeaseLostError} if the lease is or becomes lost (or was released).
   */
  readCheckpoint(): Promise<CheckpointRead> {
    if (!this.#checkDeadline()) return Promise.reject(this.#ended)
    if (this.#releaseRequested) return Promise.reject(this.#endError('released'))
    return this.#enqueue(() => this.#readOp())
  }

  /**
   * Stops renewing and releases the lease, after any in-flight renew or checkpoint settles (never
   * racing it; a renew waiting to retry gives up at once). Transient store errors are retried until
   * the local deadline. Keeps the process alive until it settles. Idempotent; never
   * rejects: if the lease was lost (before or during the release), `lossError` says so and the
   * `lost` event was emitted.
   */
  release(): Promise<void> {
    return this.#release('released')
  }

  /**
   * Stops renewing without releasing: the lease expires on its own and the successor sees
   * `cleanHandoff: false`. Use it when the work failed in a way the successor should know about.
   */
  abandon(): void {
    if (this.#ended) return
    this.#releaseRequested = true
    this.#end(this.#endError('abandoned'))
    this.#ctx.events.emit('released', { ...this.#base(), clean: false, reason: 'abandoned' })
  }

  /** Same as {@link release}, for `await using lease = await leaser.acquire(...)`. */
  [Symbol.asyncDispose](): Promise<void> {
    return this.release()
  }

  /** @internal */
  [closeLease](): Promise<void> {
    return this.#release('closed')
  }

  #base() {
    return { workId: this.workId, holderId: this.record.holderId, fencingToken: this.record.fencingToken }
  }

  #endError(reason: LeaseEndReason, cause?: unknown): LeaseLostError {
    return new LeaseLostError(reason, { workId: this.workId, fencingToken: this.record.fencingToken, cause })
  }

  /** Time to the local deadline: the sooner of the monotonic and the wall-clock one. */
  #remaining(): number {
    const { timers } = this.#ctx
    const mono = this.#deadline - timers.now()
    const wall = timers.wallNow ? this.#wallDeadline - timers.wallNow() : Number.POSITIVE_INFINITY
    return Math.min(mono, wall)
  }

  /** Whether still held; declares the lease lost if the local deadline passed. */
  #checkDeadline(): boolean {
    if (this.#ended) return false
    if (this.#remaining() <= 0) {
      this.#lose('deadline', this.#lastTransient)
      return false
    }
    return true
  }

  #lose(reason: LeaseLossReason, cause: unknown): void {
    if (this.#ended) return
    const error = this.#endError(reason, cause)
    this.#loss = error
    this.#end(error)
    this.#ctx.events.emit('lost', { ...this.#base(), reason, error })
  }

  #end(error: LeaseLostError): void {
    this.#ended = error
    this.#ctx.timers.clearTimeout(this.#renewTimer)
    this.#ctx.timers.clearTimeout(this.#watchdog)
    this.#renewTimer = undefined
    this.#watchdog = undefined
    // Aborting also abandons any backend call still in flight for this lease.
    this.#controller.abort(error)
    this.#ctx.onEnd(this)
  }

  /** A renew or checkpoint that started at `start` succeeded: the backend's expiry is >= start + ttl. */
  #extend(start: Instant): void {
    if (start.mono < this.#lastSuccessStart) return
    const usable = this.#ctx.ttlMs - this.#ctx.safetyMarginMs
    this.#lastSuccessStart = start.mono
    this.#deadline = start.mono + usable
    // A wall clock stepped back makes this later than it should be; the monotonic deadline still holds.
    this.#wallDeadline = start.wall === undefined ? Number.POSITIVE_INFINITY : start.wall + usable
    this.#lastTransient = undefined
    this.#arm()
  }

  #arm(): void {
    const { timers } = this.#ctx
    timers.clearTimeout(this.#renewTimer)
    timers.clearTimeout(this.#watchdog)
    this.#renewTimer = undefined
    this.#watchdog = undefined
    if (this.#ended) return
    const now = timers.now()
    this.#watchdog = timers.setTimeout(() => this.#onWatchdog(), this.#remaining())
    if (this.#releaseRequested) return
    // Jitter only shortens the interval, so the configured one stays an upper bound.
    const interval = this.#ctx.renewIntervalMs * (1 - this.#ctx.renewJitter * this.#ctx.random())
    this.#renewTimer = timers.setTimeout(() => this.#onRenewTimer(), this.#lastSuccessStart + interval - now)
  }

  #onWatchdog(): void {
    this.#watchdog = undefined
    // Fired early (the deadline moved or the timer ran ahead of the clock): re-arm just the watchdog.
    if (this.#checkDeadline()) {
      this.#watchdog = this.#ctx.timers.setTimeout(() => this.#onWatchdog(), this.#remaining())
    }
  }

  #onRenewTimer(): void {
    this.#renewTimer = undefined
    if (!this.#checkDeadline() || this.#releaseRequested || this.#renewQueued) return
    this.#renewQueued = true
    const queuedAt = this.#ctx.timers.now()
    void this.#enqueue(() => this.#renewOp(queuedAt)).finally(() => {
      this.#renewQueued = false
    })
  }

  /** Runs `op` after every earlier op settled: renews, checkpoints, reads and the release never overlap. */
  #enqueue<T>(op: () => Promise<T>): Promise<T> {
    const next = this.#queue.then(op, op)
    this.#queue = next.catch(() => undefined)
    return next
  }

  /** One backend call, abandoned when the lease ends or after `timeoutMs`. */
  #call<T>(invoke: (signal: AbortSignal) => Promise<T>, timeoutMs?: number): Promise<T> {
    const { controller, dispose } = linkedController(this.#ctx.timers, [this.#controller.signal], timeoutMs)
    return raceSignal(invoke(controller.signal), controller.signal).finally(dispose)
  }

  /** Waits before the next attempt: backoff, but never past the local deadline or an abort of `wake`. */
  #backoff(attempt: number, wake?: AbortSignal): Promise<void> {
    const { timers, retry, random } = this.#ctx
    // At most half the time left, so attempts get denser (not sparser) as the deadline nears.
    const ms = Math.min(backoffDelay(retry, attempt, random), this.#remaining() / 2)
    return sleep(timers, ms, this.#controller.signal, wake)
  }

  #transient(op: Op, error: unknown, attempt: number): void {
    this.#lastTransient = error
    this.#ctx.events.emit('renewFailed', {
      ...this.#base(),
      op,
      error,
      attempt,
      remainingMs: Math.max(0, this.#remaining()),
    })
  }

  /** Handles a lease outcome from the backend; returns false for a transient store error. */
  #outcome(error: unknown): boolean {
    if (isFencedError(error)) this.#lose('fenced', error)
    else if (isLeaseExpiredError(error)) this.#lose('expired', error)
    else if (isWorkleaseError(error)) this.#lose('rejected', error)
    else return false
    return true
  }

  async #renewOp(queuedAt: number): Promise<void> {
    // A checkpoint that started after this renew was queued already renewed the lease.
    if (this.#lastSuccessStart >= queuedAt) return
    const { backend, ttlMs, timers, callTimeoutMs } = this.#ctx
    for (let attempt = 0; ; attempt++) {
      if (!this.#checkDeadline() || this.#releaseRequested) return
      const start = instant(timers)
      try {
        await this.#call((signal) => backend.renew(this.record, ttlMs, { signal }), callTimeoutMs)
      } catch (error) {
        if (!this.#checkDeadline() || this.#outcome(error)) return
        // The token never changes on renew, so retrying after a lost reply is safe.
        this.#transient('renew', error, attempt + 1)
        // The release queued behind us makes its own attempts; don't delay it, neither now nor
        // when it is requested during the backoff.
        if (this.#releaseRequested) return
        await this.#backoff(attempt, this.#releaseRequests.signal)
        continue
      }
      // A reply that arrives after the deadline proves nothing about now: the deadline check wins.
      if (!this.#checkDeadline()) return
      this.#extend(start)
      this.#ctx.events.emit('renewed', { ...this.#base(), op: 'renew', remainingMs: this.remainingMs() })
      return
    }
  }

  async #checkpointOp(state: Uint8Array): Promise<void> {
    const { backend, ttlMs, timers } = this.#ctx
    for (let attempt = 0; ; attempt++) {
      if (!this.#checkDeadline()) throw this.#ended
      const start = instant(timers)
      try {
        // No per-attempt timeout: an abandoned checkpoint could land after a newer one and
        // overwrite it. It is still abandoned when the lease ends.
        await this.#call((signal) => backend.checkpoint(this.record, state, ttlMs, { signal }))
      } catch (error) {
        await this.#afterFailedCall('checkpoint', error, attempt)
        continue
      }
      if (!this.#checkDeadline()) throw this.#ended
      this.#extend(start)
      this.#ctx.events.emit('renewed', { ...this.#base(), op: 'checkpoint', remainingMs: this.remainingMs() })
      return
    }
  }

  /**
   * After a failed checkpoint or read: FENCED ends the lease, another lease outcome is the caller's,
   * and a store error is retried after a backoff, until the local deadline.
   */
  async #afterFailedCall(
    op: 'checkpoint' | 'readCheckpoint',
    error: unknown,
    attempt: number,
  ): Promise<void> {
    if (!this.#checkDeadline()) throw this.#ended
    if (isFencedError(error)) {
      this.#lose('fenced', error)
      throw this.#ended
    }
    if (isWorkleaseError(error)) throw error
    this.#transient(op, error, attempt + 1)
    await this.#backoff(attempt)
  }

  async #readOp(): Promise<CheckpointRead> {
    const { backend, callTimeoutMs } = this.#ctx
    for (let attempt = 0; ; attempt++) {
      if (!this.#checkDeadline()) throw this.#ended
      try {
        const read = await this.#call(
          (signal) => backend.readCheckpoint(this.record, { signal }),
          callTimeoutMs,
        )
        if (!this.#checkDeadline()) throw this.#ended
        return read
      } catch (error) {
        await this.#afterFailedCall('readCheckpoint', error, attempt)
      }
    }
  }

  #release(reason: 'released' | 'closed'): Promise<void> {
    if (this.#releasing) return this.#releasing
    this.#releaseRequested = true
    this.#releaseRequests.abort()
    this.#ctx.timers.clearTimeout(this.#renewTimer)
    this.#renewTimer = undefined
    // The runner's timers are unref'd, so a process with nothing else to do would exit in the middle
    // of `await lease.release()` and leave the lease to expire. Bounded: the release gives up at the
    // local deadline.
    const letGo = keepProcessAlive()
    this.#releasing = this.#enqueue(() => this.#releaseOp(reason)).finally(letGo)
    return this.#releasing
  }

  async #releaseOp(reason: 'released' | 'closed'): Promise<void> {
    const { backend, callTimeoutMs } = this.#ctx
    // Set once an attempt's outcome is unknown: it may have landed, so a later FENCED is our own release.
    let mayHaveLanded = false
    for (let attempt = 0; ; attempt++) {
      if (!this.#checkDeadline()) return
      try {
        await this.#call((signal) => backend.release(this.record, { signal }), callTimeoutMs)
        break
      } catch (error) {
        if (!this.#checkDeadline()) return
        if (isFencedError(error) && mayHaveLanded) break
        if (this.#outcome(error)) return
        mayHaveLanded = true
        this.#transient('release', error, attempt + 1)
        await this.#backoff(attempt)
      }
    }
    const error = this.#endError(reason)
    if (reason === 'closed') this.#loss = error
    this.#end(error)
    this.#ctx.events.emit('released', { ...this.#base(), clean: true, reason })
  }
}
