import {
  type Backend,
  type CheckpointRead,
  createLeaseRecord,
  InvalidArgumentError,
  isLeaseHeldError,
  isWorkleaseError,
  LeaseHeldError,
  type LeaseRecord,
  validateId,
  validateRecord,
  validateTtl,
} from '@worklease/spec'
import {
  Cancel,
  invoke,
  isAborted,
  keepProcessAlive,
  linkedCancel,
  linkedController,
  raceWithin,
  reasonOf,
  sleep,
} from './abortable.js'
import { CallSignals } from './call-signals.js'
import {
  checkBackend,
  checkBoolean,
  checkCodec,
  checkNumber,
  checkRandom,
  checkSignal,
  checkTimers,
  describeValue,
  readFields,
  resolveRetry,
} from './check-option.js'
import { bytesCodec } from './checkpoint-codec.js'
import { DeadlineWatch } from './deadline-watch.js'
import { defaultHolderId } from './default-holder-id.js'
import { HeldLeases } from './held-leases.js'
import { keptBeforeRunning } from './kept-before-running.js'
import { closeLease, confirmLease, Lease, type LeaseContext, storeSideLive, workDone } from './lease.js'
import { LeaseLostError } from './lease-lost-error.js'
import { LeaserClosedError } from './leaser-closed-error.js'
import {
  LeaserEmitter,
  type LeaserEventName,
  type LeaserListener,
  UnreportedEvents,
} from './leaser-events.js'
import type { AcquireOptions, CloseOptions, LeaserOptions, RunOptions } from './leaser-options.js'
import { LocalDeadline } from './local-deadline.js'
import { RenewalSchedule } from './renewal-schedule.js'
import { type ReportedHolder, reportedHolder } from './reported-holder.js'
import { RetiredTokens } from './retired-tokens.js'
import { backoffDelay } from './retry-policy.js'
import { throwLater } from './throw-later.js'
import { type Instant, instant, MAX_TIMER_MS, systemTimers } from './timers.js'

/**
 * @internal A store call of a Leaser's user inside this package (LeasePool's listings), bounded as the
 * Leaser bounds its own: the backend gets a signal that aborts at `callTimeoutMs`, and the caller
 * stops waiting then, or when `stop` aborts, even if the backend ignores its signal.
 */
export const boundedStoreCall: unique symbol = Symbol('worklease.boundedStoreCall')

/**
 * @internal Marks a workId whose leases carry no state and no handoff (a pool's membership key), or,
 * with `{ prefix: true }`, every workId that begins so (a pool's done marks): a lease of it that an
 * acquire no longer wants is released, even after a crashed holder. Left to expire, a membership would
 * show a member that is gone for a ttl, and a done mark would not be set.
 */
export const releaseOrphansOf: unique symbol = Symbol('worklease.releaseOrphansOf')

/**
 * @internal Marks a lease that work of this package's holds (a pool unit's handler) until `finished`
 * settles: `close()` then treats it as it treats `run`'s, kept renewed in the store until the work
 * is done and its owner has released or abandoned it. Released at once, a successor would take the
 * unit while its handler still runs.
 */
export const keepWhileWorking: unique symbol = Symbol('worklease.keepWhileWorking')

/**
 * @internal Whether a value is a Leaser this class built: a Proxy of one passes `instanceof` but not
 * this (its private fields are out of reach, so every call on it would throw a TypeError).
 */
export const isLeaser: unique symbol = Symbol('worklease.isLeaser')

/** How many of the workIds it let go of last a Leaser remembers the tokens of, at least. */
const MAX_RETIRED = 100_000
/** The longest a renewal waits for others to share its `renewMany` call. */
const MAX_RENEW_BATCH_WINDOW_MS = 1_000

/** Longest extra wait after a reported expiry: spreads waiters out, costs a takeover at most this. */
const MAX_TAKEOVER_JITTER_MS = 25

/** What one acquire attempt took: the record, and the checkpoint when the store sent it along. */
interface Taken {
  readonly record: LeaseRecord
  readonly checkpoint?: CheckpointRead
}

/** A lease one acquire found it holds: the record, and when to count its local deadline from. */
interface FoundLease extends Taken {
  readonly start: Instant
  /** Adopted from a `LEASE_HELD` that named us: renew at once to have the store confirm it. */
  readonly confirm: boolean
}

/** One `acquire` call, as its attempts (also the abandoned ones, when they settle) see it. */
interface PendingAcquire {
  readonly workId: string
  /** When the acquire's `timeoutMs` runs out, on the monotonic clock (Infinity without one). */
  readonly giveUpAt: number
  readonly timeoutMs: number | undefined
  /** The acquire settled: what its attempts find from now on is an orphan. */
  done: boolean
  /** Start of the first attempt whose outcome is unknown (a store error or timeout). */
  unknownSince: Instant | undefined
  /** The last reply left it open whether an attempt with an unknown outcome took the lease. */
  unresolved: boolean
  /** Attempts sent and not settled yet, abandoned ones included: each will still tell us something. */
  inFlight: number
  found: FoundLease | undefined
  adopted?: boolean
  /**
   * The backoff the acquire sleeps in, if it does: aborted when an abandoned attempt finds the lease.
   * One per sleep: a found lease can still be dropped (another acquire of ours handed it out), and
   * a wake left aborted would turn every later wait into a retry at once.
   */
  wake?: Cancel
}

/**
 * What an attempt took, as the acquire keeps it. Field by field: a spread of the driver's object (its
 * shape unknown to the engine) took half the CPU profile's samples of `acquire`'s own frame on the
 * memory backend.
 */
function foundLease(taken: Taken, workId: string, holderId: string, start: Instant): FoundLease {
  const { record, checkpoint } = taken
  // A backend is user code: a Lease on a record of another workId or holder would renew, and report
  // as ours, a lease someone else holds. Such a reply is a store failure, its outcome unknown.
  let checked: LeaseRecord
  try {
    checked = validateRecord(record)
  } catch (error) {
    throw new TypeError(`the backend answered an acquire of ${workId} with no lease record`, { cause: error })
  }
  if (checked.workId !== workId || checked.holderId !== holderId) {
    throw new TypeError(
      `the backend answered an acquire of ${workId} by ${holderId} with a lease of ${checked.workId} by ${checked.holderId}`,
    )
  }
  return { record: checked, checkpoint, start, confirm: false }
}

/** What `acquire` (and `run`, for its acquire) does, from options read once and checked. */
interface CheckedAcquireOptions {
  readonly wait: boolean
  readonly signal: AbortSignal | undefined
  readonly timeoutMs: number | undefined
}

const ACQUIRE_OPTIONS = ['wait', 'signal', 'timeoutMs'] as const
const RUN_OPTIONS = [...ACQUIRE_OPTIONS, 'onError'] as const
const LEASER_OPTIONS = [
  'backend',
  'ttlMs',
  'holderId',
  'renewIntervalMs',
  'renewJitter',
  'safetyMarginMs',
  'callTimeoutMs',
  'checkpointTimeoutMs',
  'retry',
  'timers',
  'random',
  'codec',
  'prefetchCheckpoint',
] as const satisfies readonly (keyof LeaserOptions)[]

/** The acquire options as read, each once, from the caller's object: not checked yet. */
type AcquireFields = { readonly [K in (typeof ACQUIRE_OPTIONS)[number]]: unknown }

/** `fields` undefined: no options were given. */
function checkAcquireOptions(fields: AcquireFields | undefined): CheckedAcquireOptions {
  if (fields === undefined) return NO_ACQUIRE_OPTIONS
  return {
    wait: checkBoolean('wait', fields.wait, false),
    signal: checkSignal('signal', fields.signal),
    timeoutMs:
      fields.timeoutMs === undefined
        ? undefined
        : checkNumber('timeoutMs', fields.timeoutMs, 0, Number.MAX_SAFE_INTEGER),
  }
}

// What an acquire without options reads to: one object, not three option reads and a new one a call.
const NO_ACQUIRE_OPTIONS = Object.freeze(
  checkAcquireOptions({ wait: undefined, signal: undefined, timeoutMs: undefined }),
)

/**
 * The runner: acquires leases over any {@link Backend}, waits for held ones with backoff, renews
 * them in the background, aborts their signal on loss, and releases them. One Leaser holds leases
 * under one holderId; create one per process (or per worker pool).
 *
 * ```ts
 * const leaser = new Leaser({ backend, ttlMs: 30_000 })
 * const report = await leaser.run('nightly-report', async (lease) => build({ signal: lease.signal }), {
 *   wait: true,
 * })
 * await leaser.close()
 * ```
 */
export class Leaser<S = Uint8Array> implements AsyncDisposable {
  declare readonly backend: Backend
  declare readonly holderId: string
  declare readonly ttlMs: number
  declare readonly renewIntervalMs: number
  declare readonly safetyMarginMs: number

  readonly #ctx: LeaseContext
  /** The context of leases taken as close() ran, released without a word: see #adopt. */
  #unreported: LeaseContext | undefined
  readonly #leases = new HeldLeases<Lease<S>>()
  /**
   * workId -> the last token this Leaser handed out and let go of, never to be adopted again. The store
   * may still name us its holder, for good rather than for a ttl: a call still in flight when the
   * lease ended (a checkpoint, a renew) can land any time later and extend it by a ttl from then, and
   * adopting it would hand a new run the token of a run that was told it lost the lease. A later
   * acquire of ours always has a larger token, so nothing of ours is refused for it.
   */
  readonly #retired = new RetiredTokens(MAX_RETIRED)
  readonly #events = new LeaserEmitter()
  /** Aborted by `close()`: every pending acquire gives up with its reason. */
  readonly #closeCancel = new Cancel()
  #closing: Promise<void> | undefined
  /** close() has stopped waiting (quiet, or its timeout passed): no attempt's unknown outcome is asked about. */
  #closeDone = false
  /**
   * Store calls out that no caller awaits once its acquire gave up: attempts, the asks of
   * #settleUnknown, releases of orphans. Counted, not kept: one per attempt, on the hot path.
   */
  #unawaited = 0
  /** Wakes `close()` when the count above falls to 0. */
  #onQuiet: (() => void) | undefined
  /** Acquires also bring back the checkpoint (the option, and a backend that can). */
  readonly #prefetchCheckpoint: boolean
  readonly #reportsHolder: boolean
  /** The acquires of each workId that still wait for a lease: {@link #handOn} gives them what others found. */
  readonly #waiting = new Map<string, PendingAcquire[]>()
  /** WorkIds whose orphans are released whatever their handoff (see {@link releaseOrphansOf}). */
  readonly #stateless = new Set<string>()
  readonly #statelessPrefixes = new Set<string>()

  constructor(leaserOptions: LeaserOptions<S>) {
    if (typeof leaserOptions !== 'object' || leaserOptions === null)
      throw new InvalidArgumentError('options are required')
    const options = readFields('options', leaserOptions, LEASER_OPTIONS)
    const checked = checkBackend('options.backend', options.backend)
    const { backend } = checked
    const { ttlMs } = options
    validateTtl(ttlMs)
    const holderId = options.holderId ?? defaultHolderId()
    validateId('holderId', holderId)
    const safetyMarginMs = checkNumber(
      'safetyMarginMs',
      options.safetyMarginMs ?? Math.floor(ttlMs / 10),
      0,
      ttlMs - 1,
    )
    const usable = ttlMs - safetyMarginMs
    const renewIntervalMs = checkNumber(
      'renewIntervalMs',
      options.renewIntervalMs ?? Math.max(1, Math.floor(ttlMs / 3)),
      1,
      ttlMs,
    )
    if (renewIntervalMs >= usable) {
      throw new InvalidArgumentError(
        options.renewIntervalMs === undefined
          ? `ttlMs ${ttlMs} is too short: a renewal every ${renewIntervalMs} ms cannot come before ttlMs - safetyMarginMs (${usable})`
          : `renewIntervalMs must be below ttlMs - safetyMarginMs (${usable})`,
      )
    }
    const renewJitter = checkNumber('renewJitter', options.renewJitter ?? 0.2, 0, 1)
    const callTimeoutMs = checkNumber(
      'callTimeoutMs',
      options.callTimeoutMs ?? renewIntervalMs,
      1,
      MAX_TIMER_MS,
    )
    const checkpointTimeoutMs = checkNumber(
      'checkpointTimeoutMs',
      options.checkpointTimeoutMs ?? callTimeoutMs,
      1,
      MAX_TIMER_MS,
    )
    const checkedRandom = checkRandom('options.random', options.random ?? Math.random)
    // Drawn as a renewal is scheduled and a lease handed out: a throw there would leave the lease
    // unrenewed, or taken and never handed out. A bug to surface, as a listener's throw is; the draw
    // counts as 0.5, as an answer out of range does.
    const random = () => {
      try {
        return checkedRandom()
      } catch (error) {
        throwLater(error)
        return 0.5
      }
    }
    const retry = resolveRetry(options.retry)
    const timers = checkTimers('options.timers', options.timers ?? systemTimers)
    const codec = checkCodec<S>('options.codec', options.codec ?? bytesCodec)
    const prefetchCheckpoint = checkBoolean('prefetchCheckpoint', options.prefetchCheckpoint, true)

    // Read-only at run time too: the runner and the pool read them back, and a holderId changed
    // after the check took leases under an id nobody validated.
    const settings = { backend, holderId, ttlMs, renewIntervalMs, safetyMarginMs }
    for (const [name, value] of Object.entries(settings))
      Object.defineProperty(this, name, { value, enumerable: true, writable: false, configurable: false })
    this.#prefetchCheckpoint = prefetchCheckpoint && checked.acquireWithCheckpoint
    this.#reportsHolder = checked.reportsHolder
    // Many leases, one round trip per batch: renewals falling due within a tenth of the interval (at
    // most a second) go out together where the backend can renew many at once.
    const maxRecords = checked.renewManyMaxRecords
    const schedule =
      maxRecords !== undefined
        ? new RenewalSchedule(backend, {
            maxRecords,
            ttlMs,
            timers,
            windowMs: Math.min(MAX_RENEW_BATCH_WINDOW_MS, Math.floor(renewIntervalMs / 10)),
            callTimeoutMs,
            // Every lease whose renewal starts is live in the store, so among these.
            mayRepeat: () => this.#leases.sharesWorkIds,
          })
        : undefined
    const callSignals = new CallSignals(timers, callTimeoutMs)
    this.#ctx = Object.freeze({
      backend,
      ttlMs,
      safetyMarginMs,
      renewIntervalMs,
      renewJitter,
      schedule,
      deadlines: new DeadlineWatch(timers, ttlMs - safetyMarginMs),
      callTimeoutMs,
      checkpointTimeoutMs,
      callSignals,
      checkpointSignals:
        checkpointTimeoutMs === callTimeoutMs ? callSignals : new CallSignals(timers, checkpointTimeoutMs),
      retry,
      timers,
      random,
      codec,
      maxStateBytes: checked.maxStateBytes,
      events: this.#events,
      onEnd: (lease: Lease<any>) => {
        this.#leases.delete(lease)
        // Unless the store confirmed the release, it may name us its holder for up to a ttl more
        // (abandoned, lost, or a release whose outcome is unknown): never mistake that for the lost
        // reply of a later acquire. Released too: another acquire of ours on this workId may still
        // be waiting for the reply that carries this token.
        this.#retired.retire(lease.workId, lease.fencingToken)
      },
    })
  }

  /** @internal See {@link releaseOrphansOf}. */
  [releaseOrphansOf](workId: string, { prefix = false }: { prefix?: boolean } = {}): void {
    if (prefix) this.#statelessPrefixes.add(workId)
    else this.#stateless.add(workId)
  }

  /** @internal See {@link keepWhileWorking}. */
  [keepWhileWorking](lease: Lease<S>, finished: Promise<unknown>): void {
    const settled = finished.then(
      () => undefined,
      () => undefined,
    )
    lease[workDone] = settled
    settled.then(() => {
      if (lease[workDone] === settled) lease[workDone] = undefined
    })
  }

  /** @internal See {@link isLeaser}. */
  static [isLeaser](value: unknown): value is Leaser<any> {
    return typeof value === 'object' && value !== null && #ctx in value
  }

  /** @internal See {@link boundedStoreCall}. */
  [boundedStoreCall]<T>(call: (signal: AbortSignal) => Promise<T>, stop: AbortSignal): Promise<T> {
    // Nothing sent once stopped; a call already out is told of both, its timeout and `stop`.
    if (stop.aborted) return Promise.reject(stop.reason)
    const { callSignals, timers } = this.#ctx
    const sent = callSignals.call((signal) => {
      const { controller, dispose } = linkedController(timers, [signal, stop])
      return invoke(() => call(controller.signal)).finally(dispose)
    })
    return raceWithin(sent, stop, callSignals.timeouts)
  }

  /** The leases this Leaser currently holds, in no promised order. */
  get leases(): readonly Lease<S>[] {
    return [...this.#leases].filter((lease) => lease.held)
  }

  /** Whether `close()` was called. */
  get closed(): boolean {
    return this.#closing !== undefined
  }

  /**
   * Subscribes to an event; returns a function that unsubscribes. Listeners run synchronously and
   * must not throw (a throw is rethrown on the next tick, like `diagnostics_channel` does).
   * @throws `InvalidArgumentError` for an event there is none of, or a listener that is no function.
   *
   * ```ts
   * const off = leaser.on('renewFailed', ({ workId, error }) => log.warn({ workId, err: error }))
   * ```
   */
  on<E extends LeaserEventName>(event: E, listener: LeaserListener<E>): () => void {
    return this.#events.on(event, listener)
  }

  /** Removes a listener added with {@link on}. */
  off<E extends LeaserEventName>(event: E, listener: LeaserListener<E>): void {
    this.#events.off(event, listener)
  }

  /**
   * Acquires the lease on `workId` and starts renewing it. Transient store errors are retried with
   * backoff, up to `retry.maxAttempts` in a row. While pending (waiting or retrying) it keeps the
   * process alive; the held lease it returns does not (its renewal timers are unref'd).
   * @throws `LeaseHeldError` if someone holds it (with `wait`: once `timeoutMs` passed).
   * @throws `signal.reason` when `signal` aborts; {@link LeaserClosedError} once `close()` was called.
   * @throws `InvalidArgumentError` for a workId or an option it cannot use, before any store call.
   */
  acquire(workId: string, options?: AcquireOptions): Promise<Lease<S>> {
    let checked: CheckedAcquireOptions
    try {
      validateId('workId', workId)
      checked = checkAcquireOptions(
        options === undefined ? undefined : readFields('options', options, ACQUIRE_OPTIONS),
      )
    } catch (error) {
      // Not an async wrapper around #acquire: that would cost a promise more on every acquire.
      return Promise.reject(error)
    }
    return this.#acquire(workId, checked)
  }

  /**
   * Sleeps `delay` before `call`'s next attempt: no later than its `giveUpAt` (else a timeout), nor
   * past `cancel`. A method, not a closure in #acquire: one would hold the acquire's variables in a
   * context allocated on every acquire, most of which never sleep.
   */
  async #pause(call: PendingAcquire, cancel: Cancel, delay: number, lastError: unknown): Promise<void> {
    const { timers } = this.#ctx
    const now = timers.now()
    if (now >= call.giveUpAt) throw this.#timeoutError(call.workId, call.timeoutMs ?? 0, lastError)
    call.wake = new Cancel()
    await sleep(timers, Math.min(delay, call.giveUpAt - now), cancel, call.wake)
    call.wake = undefined
    if (cancel.aborted) throw cancel.reason
  }

  /** `callbackDone`: run's, registered as the lease is adopted, before close() or a listener can see it. */
  async #acquire(
    workId: string,
    { wait, signal, timeoutMs }: CheckedAcquireOptions,
    callbackDone?: Promise<void>,
  ): Promise<Lease<S>> {
    if (this.closed) throw new LeaserClosedError()
    if (signal !== undefined && isAborted(signal)) throw reasonOf(signal)

    const { timers, retry, random } = this.#ctx
    // Without a signal of the caller's, close() is all that ends the wait: its Cancel serves as is.
    let cancel = this.#closeCancel
    let dispose: (() => void) | undefined
    if (signal !== undefined) ({ cancel, dispose } = linkedCancel(timers, [signal, cancel]))
    // The runner's timers are unref'd (a held lease must not keep a finished process up), but a
    // pending acquire is work in progress: without this, a process whose only work is waiting for a
    // lease would exit 0 without doing it.
    const letGo = keepProcessAlive()
    const call: PendingAcquire = {
      workId,
      giveUpAt: timeoutMs === undefined ? Number.POSITIVE_INFINITY : timers.now() + timeoutMs,
      timeoutMs,
      done: false,
      unknownSince: undefined,
      unresolved: false,
      inFlight: 0,
      found: undefined,
    }
    const waiting = this.#waiting.get(workId)
    if (waiting) waiting.push(call)
    else this.#waiting.set(workId, [call])
    let heldPolls = 0
    let transientInARow = 0
    let handedOutInARow = 0
    let attempts = 0
    let lastError: unknown
    try {
      for (;;) {
        if (call.found) {
          // Another acquire of ours on this workId has this token, or has let it go: never twice.
          if (!this.#handedOut(workId, call.found.record.fencingToken)) break
          call.found = undefined
          // Its next attempt finds the lease held (another acquire of ours adopted it). A backend that
          // answers every attempt with an old token is asked again after a backoff, as after a store
          // failure, and as often. A timeout reports the last other reply, if there was one.
          const handedOut = new TypeError(
            `the backend answered an acquire of ${workId} with a token already handed out`,
          )
          if (++handedOutInARow > retry.maxAttempts) throw handedOut
          lastError ??= handedOut
          await this.#pause(call, cancel, backoffDelay(retry, handedOutInARow - 1, random), lastError)
        }
        const start = instant(timers)
        attempts++
        try {
          // Never cut short by timeoutMs: an attempt abandoned mid-flight may still take the lease,
          // which then has to be released again (a burnt token) while we report a timeout.
          const taken = await this.#acquireOnce(call, start, cancel)
          this.#keepNewer(call, foundLease(taken, workId, this.holderId, start))
        } catch (error) {
          // An answer that is no lease: not a token already handed out, so not one in a row.
          handedOutInARow = 0
          if (cancel.aborted) {
            // The attempt failed on its own, and the abort came before this resumed: nobody abandoned
            // it, so only this marks its outcome unknown, for the finally to ask about it once more.
            if (error !== cancel.reason && !isWorkleaseError(error)) {
              call.unknownSince ??= start
              call.unresolved = true
            }
            throw cancel.reason
          }
          if (call.found) continue
          const holder = isLeaseHeldError(error) ? reportedHolder(error) : undefined
          if (isLeaseHeldError(error)) {
            call.found = this.#ownLease(call, holder, start)
            if (call.found) continue
            // Someone else holds it: an earlier attempt of ours did not take it (or it would be ours
            // until it expires). Without a holder in the reply we cannot tell.
            if (holder) call.unresolved = false
            if (!wait) throw error
            transientInARow = 0
            lastError = error
          } else if (isWorkleaseError(error)) {
            throw error
          } else {
            // Unknown outcome: the attempt may have taken the lease (see #ownLease).
            call.unknownSince ??= start
            call.unresolved = true
            lastError = error
            if (++transientInARow >= retry.maxAttempts) throw error
          }
          const delay = isLeaseHeldError(error)
            ? this.#heldDelay(holder, heldPolls++)
            : backoffDelay(retry, transientInARow - 1, random)
          await this.#pause(call, cancel, delay, lastError)
        }
      }
      // Adopted from here on, even if #adopt finds the Leaser closed: then the Lease releases it.
      call.adopted = true
      const lease = this.#adopt(call.found, attempts, callbackDone)
      if (call.found.confirm) lease[confirmLease]()
      return lease
    } finally {
      call.done = true
      this.#stopWaiting(call)
      // Found (a late success, or our own holder) but not handed out: nobody will renew it.
      if (call.found && !call.adopted) this.#handOn(call.workId, call.found)
      else if (!call.found && call.unresolved && call.inFlight === 0) this.#settleUnknown(call)
      dispose?.()
      letGo()
    }
  }

  /**
   * Acquires `workId`, runs `fn` with the lease, and releases it. Resolves with `fn`'s result.
   *
   * If `fn` throws while the lease is held, the lease is released (or, with `onError: 'expire'`,
   * left to expire) and `run` rejects with `fn`'s error unchanged. If the lease was lost before `fn`
   * settled (or the release found it taken over), `run` rejects with a {@link LeaseLostError} whatever
   * `fn` did: `reason` and `cause` describe the loss, and `callbackError` holds `fn`'s error if it
   * threw. `fn` should watch `lease.signal` to stop early. Its options are checked (and read once)
   * as `acquire`'s are: a bad one rejects with `InvalidArgumentError` before any store call.
   *
   * ```ts
   * await leaser.run('job-7', async (lease) => {
   *   for await (const batch of source({ signal: lease.signal })) {
   *     await sink.write(batch, { fencingToken: lease.fencingToken })
   *     await lease.checkpoint(batch.cursor)
   *   }
   * }, { wait: true })
   * ```
   */
  async run<T>(workId: string, fn: (lease: Lease<S>) => Promise<T> | T, options?: RunOptions): Promise<T> {
    if (typeof fn !== 'function') throw new InvalidArgumentError('fn must be a function')
    validateId('workId', workId)
    // Read once, here: acquire gets what was checked, not the caller's object a second time.
    const fields = options === undefined ? undefined : readFields('options', options, RUN_OPTIONS)
    const onError = fields?.onError ?? 'release'
    if (onError !== 'release' && onError !== 'expire') {
      throw new InvalidArgumentError(`onError must be 'release' or 'expire', got ${describeValue(onError)}`)
    }
    let done!: () => void
    const callbackDone = new Promise<void>((resolve) => {
      done = resolve
    })
    const lease = await this.#acquire(workId, checkAcquireOptions(fields), callbackDone)
    let outcome: { ok: true; value: T } | { ok: false; error: unknown }
    let loss: LeaseLostError | undefined
    try {
      try {
        outcome = { ok: true, value: await fn(lease) }
      } catch (error) {
        outcome = { ok: false, error }
      }
      // Judged when fn settled: a loss during the release below came after the work was done.
      loss = lease.lossError
      if (!outcome.ok && onError === 'expire') lease.abandon()
      else await lease.release()
    } finally {
      lease[workDone] = undefined
      done()
    }
    // FENCED at release means someone had taken the lease over while fn was still running.
    if (!loss && lease.lossError?.reason === 'fenced') loss = lease.lossError
    if (loss) {
      throw new LeaseLostError(loss.reason, {
        workId,
        fencingToken: lease.fencingToken,
        cause: loss.cause,
        ...(outcome.ok || outcome.error === loss ? {} : { callbackError: outcome.error }),
      })
    }
    if (!outcome.ok) throw outcome.error
    return outcome.value
  }

  /**
   * Ends every held lease and releases it; waiting acquires reject with {@link LeaserClosedError}.
   * In this order, so that no successor ever overlaps work that still thinks it holds a lease:
   * 1. at once, every lease ends locally: its `signal` aborts with a {@link LeaseLostError}
   *    (`reason: 'closed'`) and `held` turns false;
   * 2. a lease held by `run` stays renewed in the store until its callback settles, then `run`
   *    releases it; a pool unit's, until its handler returns, then it is left to expire (the handler
   *    could store no checkpoint since, so the next member reads `cleanHandoff: false`); any other
   *    lease is released right away;
   * 3. after `timeoutMs` (default: the ttl), leases not released yet are abandoned: they expire on
   *    their own and the successor sees `cleanHandoff: false`.
   *
   * Within the same `timeoutMs` it also waits for the acquire attempts it cut short: one that took
   * the lease after all is released before `close()` resolves (or left to expire, if it took the lease
   * from a crashed holder: released, it would hide that crash from the successor). Once `close()`
   * resolved, an attempt whose outcome is unknown (its reply a failure, or none) is not asked about
   * again: asking is an acquire, which would take a free lease for a Leaser that is gone, so whatever
   * it took expires after its ttl. One whose late reply shows it took the lease is still released, as
   * above.
   *
   * Keeps the process alive until it settles. Idempotent.
   *
   * ```ts
   * process.once('SIGTERM', () => void leaser.close())
   * ```
   */
  close(options: CloseOptions = {}): Promise<void> {
    if (this.#closing) return this.#closing
    let timeoutMs: number
    try {
      const fields = readFields('options', options, ['timeoutMs'])
      timeoutMs = checkNumber('timeoutMs', fields.timeoutMs ?? this.ttlMs, 0, MAX_TIMER_MS)
    } catch (error) {
      // Rejected, not thrown: `process.once('SIGTERM', () => void leaser.close(...))` would make a
      // throw an uncaught exception. Nothing changed: the Leaser stays open, to be closed again.
      return Promise.reject(error)
    }
    // Kept before any lease ends: ending one runs its abort listeners, the user's code, which must
    // find the Leaser closed (no new acquire) and get this close if it calls close() itself.
    return keptBeforeRunning(
      (closing) => {
        this.#closing = closing
      },
      () => this.#close(timeoutMs),
    )
  }

  async #close(timeoutMs: number): Promise<void> {
    const letGo = keepProcessAlive()
    try {
      this.#closeCancel.abort(new LeaserClosedError())
      const leases = [...this.#leases]
      for (const lease of leases) lease[closeLease]()
      const done = Promise.allSettled(leases.map((lease) => lease[workDone] ?? lease.release()))
      const stopWaiting = new Cancel()
      try {
        // The attempts cut short settle meanwhile, and may start releases of what they took.
        const quiet = done.then(() => this.#quiet())
        // A timeout that timers refuse (reported, as user code's bugs are) has passed: waited for
        // without one, a store that hangs would hold close() for good.
        const timedOut = sleep(this.#ctx.timers, timeoutMs, stopWaiting).catch(throwLater)
        await Promise.race([quiet, timedOut])
      } finally {
        stopWaiting.abort()
      }
      this.#closeDone = true
      for (const lease of leases) lease.abandon()
      // Calls still in flight are told too: the store may hang, and nothing of ours should outlive close.
      const closed = new LeaserClosedError()
      this.#ctx.callSignals.abortAll(closed)
      this.#ctx.checkpointSignals.abortAll(closed)
      this.#ctx.schedule?.abortAll(closed)
      // Left armed as leases came and went (each fires once and finds nothing): not past close.
      this.#ctx.deadlines.clearIfIdle()
      this.#ctx.schedule?.clearIfIdle()
    } finally {
      letGo()
    }
  }

  /** Same as {@link close}, for `await using leaser = new Leaser(...)`. */
  [Symbol.asyncDispose](): Promise<void> {
    return this.close()
  }

  #acquireOnce(call: PendingAcquire, start: Instant, signal: Cancel): Promise<Taken> {
    const { ttlMs } = this.#ctx
    // The backend gets no signal: a driver that honours it rejects at once with the abort reason while
    // the statement already sent may still take the lease, and we could not tell. Only our wait is
    // abandoned, so the call settles with its real outcome and a late success is not orphaned.
    const attempt = invoke(() => this.#take(call.workId, ttlMs))
    call.inFlight++
    this.#unawaited++
    return raceWithin(attempt, signal, this.#ctx.callSignals.timeouts, {
      startedAt: start.mono,
      onSettled: () => {
        call.inFlight--
        // Before onAbandoned, which may start a release: #quiet looks again.
        this.#settled()
      },
      onAbandoned: (outcome) => {
        let found: FoundLease | undefined
        try {
          // A reply no lease can be made of is a store failure, as in the acquire's own catch.
          if (outcome.status === 'rejected') throw outcome.reason
          found = foundLease(outcome.value, call.workId, this.holderId, start)
        } catch (reason) {
          if (isLeaseHeldError(reason)) {
            const holder = reportedHolder(reason)
            found = this.#ownLease(call, holder, start)
            if (!found && holder) call.unresolved = false
          } else if (!isWorkleaseError(reason)) {
            // Unknown outcome, as in the acquire's own catch: it may have landed, even after every
            // attempt the acquire did hear back from (an abort leaves its only attempt unheard).
            call.unknownSince ??= start
            call.unresolved = true
          }
        }
        if (found) this.#lateFind(call, found)
        // The acquire gave up waiting for this attempt, which tells nothing either: ask once more.
        else if (call.done && !call.found && call.unresolved && call.inFlight === 0) this.#settleUnknown(call)
      },
    })
  }

  /**
   * An abandoned attempt turned out to have the lease: hand it to the acquire if that still waits,
   * otherwise free it now instead of making the next holder wait a whole ttl.
   */
  #lateFind(call: PendingAcquire, found: FoundLease): void {
    const token = found.record.fencingToken
    if (call.found?.record.fencingToken === token || this.#handedOut(call.workId, token)) return
    // Its reply took the whole usable ttl: handed out, it would be lost at once, and a later attempt
    // of this acquire may be taking the lease anew (at a larger token) once it expired.
    if (call.done) {
      this.#handOn(call.workId, found)
      return
    }
    if (this.#noUsableTtl(found.start)) {
      this.#releaseOrphan(call.workId, found)
      return
    }
    const waiting = call.found === undefined
    this.#keepNewer(call, found)
    if (waiting) call.wake?.abort()
  }

  /**
   * An attempt of `call` took the lease. Two can (one abandoned, its reply late, the other taking the
   * lease once the first one's expired): the store keeps only the newer token, so that is the one to
   * hand out; the other is released.
   */
  #keepNewer(call: PendingAcquire, found: FoundLease): void {
    const kept = call.found
    if (kept === undefined) {
      call.found = found
      return
    }
    const token = found.record.fencingToken
    if (token === kept.record.fencingToken) return
    if (token < kept.record.fencingToken) {
      this.#releaseOrphan(call.workId, found)
      return
    }
    call.found = found
    this.#releaseOrphan(call.workId, kept)
  }

  /**
   * After an attempt with an unknown outcome, a `LEASE_HELD` that names this Leaser as the holder is
   * our own lease: an earlier attempt took it and its reply was lost. Never a lease this Leaser
   * handed out before (live, abandoned or lost): leases are not reentrant.
   */
  #ownLease(
    call: PendingAcquire,
    holder: ReportedHolder | undefined,
    start: Instant,
  ): FoundLease | undefined {
    if (call.unknownSince === undefined || holder?.holderId !== this.holderId) return undefined
    const { fencingToken, expiresInMs, expiresAtMs } = holder
    if (typeof fencingToken !== 'bigint' || !Number.isFinite(expiresInMs) || Number.isNaN(expiresAtMs)) {
      return undefined
    }
    if (this.#handedOut(call.workId, fencingToken)) return undefined
    const record = createLeaseRecord(call.workId, this.holderId, fencingToken, expiresAtMs)
    // The store said it expires expiresInMs after its "now", which was no earlier than our send:
    // counting the local deadline as if the acquire had started then errs on the safe side.
    const shift = Math.min(0, (expiresInMs as number) - this.ttlMs)
    const since = {
      mono: start.mono + shift,
      wall: start.wall === undefined ? undefined : start.wall + shift,
    }
    // Ours, but with no usable ttl left: handed out, it would be lost at once (as in #lateFind), and
    // `acquire` would resolve with a dead lease. Let go of it, and wait it out as anyone's lease;
    // unless this acquire holds that token already (a late reply found it), which it hands out.
    if (this.#noUsableTtl(since)) {
      if (call.found?.record.fencingToken !== fencingToken) this.#releaseOrphan(call.workId, { record })
      return undefined
    }
    return { record, start: since, confirm: true }
  }

  /** Whether a lease taken by a call started at `start` has no usable ttl left: lost at once. */
  #noUsableTtl(start: Instant): boolean {
    const { timers, ttlMs, safetyMarginMs } = this.#ctx
    return new LocalDeadline(timers, ttlMs - safetyMarginMs, start).remaining() <= 0
  }

  /** Whether this Leaser gave a Lease object this token (or a later one) for `workId`. */
  #handedOut(workId: string, token: bigint): boolean {
    if (this.#leases.hasToken(workId, token)) return true
    const retired = this.#retired.get(workId)
    return retired !== undefined && retired >= token
  }

  /**
   * How long a waiter sleeps after `LEASE_HELD`: its retry policy, but never past the current lease's
   * expiry when the backend reported it, plus up to 25 ms of jitter so that waiters woken by one
   * expiry do not all arrive in the same millisecond.
   */
  #heldDelay(holder: ReportedHolder | undefined, poll: number): number {
    const { retry, random } = this.#ctx
    const backoff = backoffDelay(retry, poll, random)
    const expiresInMs = holder?.expiresInMs
    if (typeof expiresInMs !== 'number' || !Number.isFinite(expiresInMs) || expiresInMs < 0) return backoff
    return Math.min(backoff, expiresInMs + 1 + random() * MAX_TAKEOVER_JITTER_MS)
  }

  /**
   * The acquire gave up (aborted, timed out, out of attempts) while an attempt's outcome was unknown:
   * one more acquire finds out whether that attempt took the lease, and frees it if so. Only where
   * the backend names the holder in `LEASE_HELD`; elsewhere such a lease expires after its ttl.
   */
  #settleUnknown(call: PendingAcquire): void {
    // Past close(), a new acquire would take the lease for a Leaser that is gone (a new token, held
    // for a ttl if the handoff was unclean): the unknown attempt's lease, if any, expires on its own.
    if (!this.#reportsHolder || this.#closeDone) return
    const start = instant(this.#ctx.timers)
    this.#unawaited++
    // Not abandoned at a timeout: the reply is what we want, and nobody waits for it.
    invoke(() => this.backend.acquire(call.workId, this.holderId, this.ttlMs)).then(
      (record) => {
        let found: FoundLease | undefined
        try {
          found = foundLease({ record }, call.workId, this.holderId, start)
        } catch {
          // A reply no lease can be made of frees nothing; the lease, if any, expires.
        }
        try {
          if (found) this.#handOn(call.workId, found)
        } finally {
          this.#settled()
        }
      },
      (error: unknown) => {
        try {
          const found = isLeaseHeldError(error)
            ? this.#ownLease(call, reportedHolder(error), start)
            : undefined
          if (found) this.#handOn(call.workId, found)
        } finally {
          // Or close() would wait for this ask until its timeout.
          this.#settled()
        }
      },
    )
  }

  /**
   * A lease an acquire of `workId` found after it stopped wanting it (its caller gave up, or the
   * lease came too late): to another acquire of the workId still waiting in this Leaser, if any, else
   * let go of. Let go of, it may be the very lease the other one's attempt took, its reply still out:
   * released under it, that acquire burnt its token and took another, and in between anyone could.
   * Handed on, it is what that acquire waits for, whichever attempt of ours took it.
   */
  #handOn(workId: string, found: FoundLease): void {
    const other = this.#waiting.get(workId)?.[0]
    if (other) this.#lateFind(other, found)
    else this.#releaseOrphan(workId, found)
  }

  #stopWaiting(call: PendingAcquire): void {
    const waiting = this.#waiting.get(call.workId)
    const index = waiting?.indexOf(call) ?? -1
    if (index >= 0) waiting!.splice(index, 1)
    if (waiting?.length === 0) this.#waiting.delete(call.workId)
  }

  /**
   * Frees a lease nobody will use, best effort and bounded like every other store call. Not one this
   * Leaser handed out: overlapping acquires of one workId can both come to know one token.
   *
   * Released only after a clean handoff: a release marks the lease ended cleanly, and after a crash
   * that would tell the successor the crashed holder finished its step, though nobody ran since. So
   * a lease taken from a crash is left to expire, and the successor sees `cleanHandoff: false` a ttl
   * later. Where the acquire brought no checkpoint, one read tells which it is.
   */
  #releaseOrphan(workId: string, { record, checkpoint }: Taken): void {
    if (this.#handedOut(workId, record.fencingToken)) return
    this.#retired.retire(workId, record.fencingToken)
    const stateless =
      this.#stateless.has(workId) || [...this.#statelessPrefixes].some((prefix) => workId.startsWith(prefix))
    if (checkpoint?.cleanHandoff === false && !stateless) return
    this.#unawaited++
    const settled = () => this.#settled()
    const { callSignals } = this.#ctx
    const release = () => callSignals.call((signal) => this.backend.release(record, { signal }))
    const freed =
      checkpoint === undefined && !stateless
        ? callSignals
            .call((signal) => this.backend.readCheckpoint(record, { signal }))
            .then((read) => (read.cleanHandoff === true ? release() : undefined))
        : release()
    freed.then(settled, settled)
  }

  /** One of the calls counted in {@link #unawaited} settled. */
  #settled(): void {
    if (--this.#unawaited > 0) return
    const quiet = this.#onQuiet
    this.#onQuiet = undefined
    quiet?.()
  }

  /**
   * Settles once no call counted in {@link #unawaited} is out, the releases that the last of them
   * started included: the count may touch 0 between an attempt settling and its release going out.
   */
  async #quiet(): Promise<void> {
    while (this.#unawaited > 0) {
      await new Promise<void>((resolve) => {
        this.#onQuiet = resolve
      })
    }
  }

  /** One acquire in the store, with the checkpoint where that costs no round trip more. */
  #take(workId: string, ttlMs: number): Promise<Taken> {
    if (this.#prefetchCheckpoint) return this.backend.acquireWithCheckpoint!(workId, this.holderId, ttlMs)
    return invoke(() => this.backend.acquire(workId, this.holderId, ttlMs)).then((record) => ({ record }))
  }

  #adopt(
    { record, start, checkpoint }: FoundLease,
    attempts: number,
    callbackDone?: Promise<void>,
  ): Lease<S> {
    if (this.closed && checkpoint?.cleanHandoff !== true) {
      // Nobody will use it: after a crash (or not known to follow a clean end) an orphan, left to
      // expire or read first, so the successor still learns of the crash.
      this.#releaseOrphan(record.workId, { record, checkpoint })
      throw new LeaserClosedError()
    }
    if (this.closed) {
      // Released as a lease is, with its retries (close() aborting a first attempt at its timeout),
      // but unreported: its `released` (or `lost`) would follow no `acquired`. Not among the leases
      // close() releases: it waits for this release as for an orphan's.
      this.#unreported ??= Object.freeze({ ...this.#ctx, events: new UnreportedEvents() })
      // Made before it is counted: a constructor that throws (timers that refuse) would leave close()
      // waiting for a release that never comes. Then it is let go of as any orphan.
      let orphan: Lease<S>
      try {
        orphan = new Lease<S>(this.#unreported, record, start, checkpoint)
      } catch {
        this.#releaseOrphan(record.workId, { record, checkpoint })
        throw new LeaserClosedError()
      }
      this.#unawaited++
      orphan.release().then(() => this.#settled())
      throw new LeaserClosedError()
    }
    let lease: Lease<S>
    try {
      lease = new Lease<S>(this.#ctx, record, start, checkpoint)
    } catch (error) {
      // Timers that refuse: held in the store with no Lease to renew or release it, it is an orphan.
      this.#releaseOrphan(record.workId, { record, checkpoint })
      throw error
    }
    // Before anyone can see the lease: close() releases a run's lease only once its callback settled.
    if (callbackDone) lease[workDone] = callbackDone
    // Dead at birth (its reply was read after the local deadline: a pause), the lease was reported
    // lost as it was made; reported acquired after that, a listener would count it held.
    if (!lease[storeSideLive]) return lease
    this.#leases.add(lease)
    if (this.#events.wants('acquired')) {
      this.#events.emit('acquired', {
        workId: record.workId,
        holderId: record.holderId,
        fencingToken: record.fencingToken,
        record,
        attempts,
      })
    }
    return lease
  }

  #timeoutError(workId: string, timeoutMs: number, lastError: unknown): unknown {
    if (isLeaseHeldError(lastError)) {
      // With the holder the store last named, as every LEASE_HELD that knows it carries it.
      const holder = reportedHolder(lastError)?.holder
      return new LeaseHeldError(`${JSON.stringify(workId)} was still held after ${timeoutMs} ms`, {
        cause: lastError,
        ...(holder === undefined ? {} : { holder }),
      })
    }
    return lastError ?? new DOMException(`timed out after ${timeoutMs} ms`, 'TimeoutError')
  }
}
