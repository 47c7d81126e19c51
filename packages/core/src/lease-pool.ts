import diagnosticsChannel from 'node:diagnostics_channel'
import {
  InvalidArgumentError,
  isInvalidArgumentError,
  isLeaseHeldError,
  type LeasePage,
  type ListOptions,
  validateId,
} from '@worklease/spec'
import { keepProcessAlive, sharedAbortController, sleep } from './abortable.js'
import {
  checkFunction,
  checkInteger,
  checkNumber,
  checkRandom,
  checkTimers,
  describeValue,
  readFields,
  resolveRetry,
} from './check-option.js'
import { evenShare, planFairShare } from './fair-share.js'
import { HandBackQueue } from './hand-back-queue.js'
import { keptBeforeRunning } from './kept-before-running.js'
import { type Lease, readHandoff, releaseConfirmed } from './lease.js'
import type { LeasePoolOptions } from './lease-pool-options.js'
import { boundedStoreCall, isLeaser, keepWhileWorking, Leaser, releaseOrphansOf } from './leaser.js'
import { LeaserClosedError } from './leaser-closed-error.js'
import { firstInOwnOrder } from './own-order.js'
import { copyView, type GroupListing, type PoolKeys, poolKeys, readGroup, viewOf } from './pool-view.js'
import { backoffDelay, type ResolvedRetryPolicy } from './retry-policy.js'
import { throwLater } from './throw-later.js'
import { MAX_TIMER_MS, systemTimers } from './timers.js'
import { type PoolHandler, type UnitEnd, UnitRunner } from './unit-runner.js'

const GROUP = /^[A-Za-z0-9._:-]{1,100}$/
const HANDLER_RETRY: ResolvedRetryPolicy = Object.freeze({
  initialDelayMs: 1_000,
  maxDelayMs: 30_000,
  multiplier: 2,
  maxAttempts: Number.MAX_SAFE_INTEGER,
})

/**
 * What a pool reports, on `pool.on(listener)` and on the `worklease:pool` diagnostics channel. The
 * unit leases' own `acquired`, `released` and `lost` events come from the Leaser as usual.
 * `taken`: this member runs the unit, reported as its handler first starts (a unit taken but found
 * finished is handed back without it).
 * `givingUp`: a rebalance gives a taken unit whose handler is still running back (another member's
 * share, no longer in `units`, or marked done elsewhere); its handler is asked to stop, and `released`
 * or `lost` follows (`done` if the handler finished before it heard). A unit given up before its
 * handler started, or after it returned, is not reported.
 * `released`: a unit given up (or held at close) was released in the store, so its successor reads
 * `cleanHandoff: true`; one whose release never landed (refused as `FENCED`, or the store failing
 * until the lease's deadline) is `lost` instead, and so is one left to expire because its handler
 * threw as it stopped (after its `handlerFailed`; a rejection with the stop's own abort is a stop;
 * a handler that throws after its lease was lost is reported `handlerFailed` before its `lost` too),
 * was stopped while waiting to run again after a throw, or the Leaser closed while the handler ran.
 * `doneMarkFailed`: a unit's handler resolved but its done mark could not be set; the pool keeps the
 * unit's lease and tries again (with `handlerRetry`), and if the pool closes first it releases the
 * unit unmarked (`released`), so another member runs it again. `unitRefused`: an id that a `units`
 * function returned cannot be a unit (see {@link LeasePoolOptions.units}); that rebalance goes on
 * without it, and it is reported again at every rebalance that reads it. `rebalanceFailed`: a
 * rebalance failed (its units, the group's listing, the join), or one unit's take did (its acquire,
 * or the read of its done mark, after which the unit goes back unrun); the loop goes on.
 *
 * ```ts
 * pool.on((event) => {
 *   if (event.type === 'rebalanceFailed' || event.type === 'unitRefused') log.warn(event)
 * })
 * ```
 */
export type PoolEvent =
  | {
      readonly type: 'taken' | 'givingUp' | 'released' | 'done' | 'lost'
      readonly group: string
      readonly unit: string
    }
  | {
      readonly type: 'handlerFailed' | 'doneMarkFailed'
      readonly group: string
      readonly unit: string
      readonly error: unknown
    }
  | { readonly type: 'rebalanceFailed'; readonly group: string; readonly error: unknown }
  | {
      readonly type: 'unitRefused'
      readonly group: string
      /** The id as the `units` function returned it: not necessarily a string. */
      readonly unit: unknown
      readonly error: InvalidArgumentError
    }

/** The diagnostics channel every pool publishes its {@link PoolEvent}s on. */
export const POOL_CHANNEL = 'worklease:pool'
const channel = diagnosticsChannel.channel(POOL_CHANNEL)

/** Acquires a rebalance keeps in flight while taking free units (fewer than a driver's usual pool). */
const TAKE_CONCURRENCY = 4
/** Units a member hands back at once (a checkpoint and a release each), leaving room for its renewals. */
const HAND_BACK_CONCURRENCY = 4
/** A member short of its share rebalances this many times faster, for at most {@link MAX_HURRIES} in a row. */
const HURRY_FACTOR = 4
const MAX_HURRIES = 8
/**
 * A member whose rebalances fail this many times in a row (it cannot read its units or the group,
 * join, or take a unit: the store failed two takes or more, none taken) leaves the group until one
 * succeeds:
 * counted, it would keep the units the others give it for its share free and unrun. Units it holds
 * it keeps running, and the others count them as held by someone outside the group: not free.
 */
const STALLED_LOOKS = 3
/**
 * How many rebalance intervals a units function may take before its rebalance fails: generous, so a
 * slow source still works; bounded, so one that never answers does not stop the member unheard.
 */
const UNITS_TIMEOUT_INTERVALS = 10

/** When a member looks again after a rebalance: at once, after a quarter interval, or an interval on. */
type NextLook = 'now' | 'soon' | 'later'

/** Most unit ids one read of `units` may give: an endless iterable is refused, not read forever. */
const MAX_UNITS = 1_000_000

/** The next value of a read of `units`, or `DONE`; what the iterable throws is bad input. */
type NextUnit = () => unknown
const DONE = Symbol('done')

/**
 * How to read `units` once, as for-of does (its `Symbol.iterator` and `next` each read once: a
 * second read could answer another method); `undefined` for anything that is not an iterable object.
 */
function readerOf(units: unknown, name: string): NextUnit | undefined {
  // A String object iterates its characters, as a plain string would: no list of unit ids either.
  if (typeof units !== 'object' || units === null || units instanceof String) return undefined
  const couldNotRead = (error: unknown) =>
    new InvalidArgumentError(`${name} could not be read`, { cause: error })
  let next: () => IteratorResult<unknown>
  try {
    const method: unknown = (units as Partial<Iterable<unknown>>)[Symbol.iterator]
    if (typeof method !== 'function') return undefined
    const iterator = method.call(units) as Iterator<unknown>
    const step = iterator.next
    next = () => step.call(iterator)
  } catch (error) {
    throw couldNotRead(error)
  }
  return () => {
    try {
      const result = next()
      return result.done ? DONE : result.value
    } catch (error) {
      throw couldNotRead(error)
    }
  }
}

/**
 * The unit ids of one read of `units`, each once, in order. An id must be a string and, with the
 * pool's prefix, a valid workId: the whole `group/u/<id>` (its done mark `group/d/<id>` is as long).
 * Checked here, before any store call, rather than by the store at a take. A number in particular:
 * the listing gives its done mark back as a string, which never matches it, so the finished unit
 * would run again at every rebalance. Each bad id goes to `refuse`.
 */
function readUnitIds(
  nextUnit: NextUnit,
  keys: PoolKeys,
  name: string,
  refuse: (id: unknown, error: InvalidArgumentError) => void,
): string[] {
  const ids = new Set<string>()
  for (let index = 0; ; index++) {
    const id = nextUnit()
    if (id === DONE) break
    if (index === MAX_UNITS) throw new InvalidArgumentError(`${name} gives more than ${MAX_UNITS} unit ids`)
    const where = `${name}[${index}]`
    try {
      validateId(where, id)
      validateId(`${where} with its prefix ${JSON.stringify(keys.unit(''))}`, keys.unit(id))
      ids.add(id)
    } catch (error) {
      if (!isInvalidArgumentError(error)) throw error
      refuse(id, error)
    }
  }
  return [...ids]
}

/** A move count of a plan: a whole number from 0 (Infinity: as many as `maxMoves` allows). */
function isMoveCount(value: unknown): value is number {
  return typeof value === 'number' && value >= 0 && (Number.isInteger(value) || value === Infinity)
}

/**
 * A planner's answer, each field read once and checked: one that is no plan (a promise from an
 * async planner, NaN, a negative or fractional count) fails the rebalance, reported, rather than
 * being read as "move nothing" for good without a word.
 */
function planOf(answer: unknown): { take: number; release: number } {
  const refused = (got: string, cause?: unknown) =>
    new InvalidArgumentError(
      `options.planner must return { take, release }, each a whole number from 0, synchronously; got ${got}`,
      cause === undefined ? undefined : { cause },
    )
  if (typeof answer !== 'object' || answer === null) throw refused(describeValue(answer))
  // A Proxy's answer may throw from any of these reads: a bad answer too, never the user's raw error.
  let isPromise: boolean
  try {
    isPromise = answer instanceof Promise
  } catch (error) {
    throw refused('an object whose prototype could not be read', error)
  }
  if (isPromise) throw refused('a promise (an async planner)')
  const { take, release } = readFields("options.planner's answer", answer, ['take', 'release'])
  if (isMoveCount(take) && isMoveCount(release)) return { take, release }
  throw refused(`{ take: ${describeValue(take)}, release: ${describeValue(release)} }`)
}

/**
 * Shares a set of units of work fairly over the live members of a group, each unit run by exactly one
 * member at a time. Membership is itself a lease (`group/m/<holderId>`), found by listing, so any
 * backend with the `list` capability supports pools. Units move by consent only: a member above its
 * share stops the handler of its surplus, lets it checkpoint, and releases (a clean handoff); a
 * member below its share takes free units. Nobody takes a live lease.
 *
 * ```ts
 * const pool = new LeasePool({
 *   leaser: new Leaser({ backend, ttlMs: 30_000 }),
 *   group: 'tenant-reindex',
 *   units: tenants.map((t) => t.id),
 *   handler: async (lease, unit) => reindex(unit.id, { signal: unit.signal, checkpoint: (s) => lease.checkpoint(s) }),
 * })
 * await pool.start()
 * process.once('SIGTERM', () => void pool.close())
 * ```
 */
export class LeasePool<S = Uint8Array> implements AsyncDisposable {
  readonly group: string
  readonly #options: Required<
    Pick<LeasePoolOptions<S>, 'leaser' | 'handler' | 'planner' | 'timers' | 'random'>
  >
  /** A static list, read and checked once at construction; or the function to call per rebalance. */
  readonly #units: readonly string[] | (() => Iterable<string> | Promise<Iterable<string>>)
  readonly #keys: PoolKeys
  readonly #intervalMs: number
  readonly #maxMoves: number | undefined
  readonly #handlerRetry: ResolvedRetryPolicy
  readonly #runners = new Map<string, UnitRunner>()
  readonly #handBacks = new HandBackQueue(HAND_BACK_CONCURRENCY)
  readonly #finishing = new Set<Promise<void>>()
  /** Runners whose handler has returned for the last time, and how: their units are on their way out. */
  readonly #ending = new Map<UnitRunner, UnitEnd>()
  readonly #closed = sharedAbortController()
  readonly #listeners = new Set<(event: PoolEvent) => void>()
  #membership: Lease<S> | undefined
  /**
   * The units the last listing showed held by someone outside the group, by whom, and since when
   * (monotonic ms, from the first listing that showed it so): see {@link #heldOutsideLong}.
   */
  #heldOutside = new Map<string, { readonly holder: string; readonly since: number }>()
  /** Rebalances that failed in a row (see {@link STALLED_LOOKS}). */
  #failedLooks = 0
  /** Times in a row this member left the group stalled, with no rebalance done since; each doubles its time out. */
  #stalls = 0
  /**
   * Whether this member's last takes all failed in the store, with none taken since. A rebalance
   * that then finds nothing free to take proves nothing: counted as done, it would let the member
   * back at once after every stall, to be given units again that it cannot take.
   */
  #takesFailing = false
  /** Whether this member left the group stalled, to join again only once it can rebalance. */
  #leftStalled = false
  /** When a member that left stalled may join again (monotonic ms). */
  #rejoinAt = 0
  #starting: Promise<void> | undefined
  #closing: Promise<void> | undefined
  #ticking: Promise<void> = Promise.resolve()
  #timer: unknown
  #hurries = 0
  #letProcessExit: (() => void) | undefined

  constructor(options: LeasePoolOptions<S>) {
    if (typeof options !== 'object' || options === null)
      throw new InvalidArgumentError('options are required')
    // Each option is read once: a getter answering differently later cannot slip past its check.
    const { leaser, group, units, handler, ...rest } = readFields('options', options, [
      'leaser',
      'group',
      'units',
      'handler',
      'planner',
      'rebalanceIntervalMs',
      'maxMovesPerRebalance',
      'handlerRetry',
      'timers',
      'random',
    ])
    if (!Leaser[isLeaser](leaser)) throw new InvalidArgumentError('options.leaser must be a Leaser')
    if (!leaser.backend.capabilities.list || typeof leaser.backend.list !== 'function') {
      throw new InvalidArgumentError(
        "options.leaser's backend cannot list leases, which pools need to find members",
      )
    }
    if (typeof group !== 'string' || !GROUP.test(group)) {
      throw new InvalidArgumentError(
        `options.group must be 1-100 letters, digits or ._:-, got ${typeof group === 'string' ? JSON.stringify(group) : describeValue(group)}`,
      )
    }
    const runHandler = checkFunction<PoolHandler<S>>('options.handler', handler)
    const readUnits = typeof units === 'function' ? undefined : readerOf(units, 'options.units')
    if (typeof units !== 'function' && readUnits === undefined) {
      throw new InvalidArgumentError(
        'options.units must be an iterable of unit ids or a function returning one',
      )
    }
    const planner = checkFunction<typeof planFairShare>('options.planner', rest.planner ?? planFairShare)
    const intervalMs = rest.rebalanceIntervalMs
    const maxMoves = rest.maxMovesPerRebalance
    const handlerRetry = rest.handlerRetry
    const timers = checkTimers('options.timers', rest.timers ?? systemTimers)
    const random = checkRandom('options.random', rest.random ?? Math.random)
    const keys = poolKeys(group)
    validateId('the member workId', keys.member(leaser.holderId))
    this.group = group
    this.#keys = keys
    this.#intervalMs = checkNumber(
      'rebalanceIntervalMs',
      intervalMs ?? leaser.renewIntervalMs,
      1,
      MAX_TIMER_MS,
    )
    this.#maxMoves =
      maxMoves === undefined ? undefined : checkInteger('maxMovesPerRebalance', maxMoves, 1, 1_000_000)
    this.#handlerRetry = resolveRetry(
      handlerRetry,
      'handlerRetry',
      HANDLER_RETRY,
      'a handler runs again for as long as this member holds its unit (give up inside the handler)',
    )
    this.#options = { leaser: leaser as Leaser<S>, handler: runHandler, planner, timers, random }
    // Last, once every other option passed: a one-shot iterable (a generator) is spent by this read.
    this.#units =
      readUnits === undefined
        ? (units as () => Iterable<string> | Promise<Iterable<string>>)
        : Object.freeze(
            readUnitIds(readUnits, keys, 'options.units', (_id, error) => {
              throw error
            }),
          )
    // A membership carries no state: one a join no longer wants (the pool closed while it was out) is
    // released, not left to count this member in the group for a ttl after it is gone.
    leaser[releaseOrphansOf](keys.member(leaser.holderId))
    // Nor does a done mark: one whose acquire close() cut short lands and is released (the mark set),
    // also where the mark was cleared before (an unclean handoff), not left to expire unset.
    leaser[releaseOrphansOf](keys.doneMark(''), { prefix: true })
  }

  /** The ids of the units this member runs now (including ones it is handing back). */
  get units(): readonly string[] {
    return [...this.#runners.keys()]
  }

  /**
   * Subscribes to every {@link PoolEvent}; returns a function that unsubscribes. Listeners run
   * synchronously and must not throw: a throw is rethrown on the next tick (as the Leaser does) and
   * changes nothing the pool does with its leases.
   *
   * ```ts
   * const off = pool.on((event) => metrics.increment(`pool.${event.type}`))
   * ```
   */
  on(listener: (event: PoolEvent) => void): () => void {
    if (typeof listener !== 'function') {
      throw new InvalidArgumentError(
        `listener must be a function (one listener gets every pool event), got ${describeValue(listener)}`,
      )
    }
    this.#listeners.add(listener)
    return () => this.#listeners.delete(listener)
  }

  /**
   * Joins the group (waits for this member's membership lease) and starts rebalancing; resolves
   * after the first rebalance. While started, the pool keeps the process alive. Idempotent while it
   * starts or runs. A start that failed (the Leaser gave up joining, the store down past its retries)
   * holds nothing and keeps nothing alive, and a later `start()` tries again.
   *
   * ```ts
   * for (;;) {
   *   try {
   *     await pool.start()
   *     break
   *   } catch (error) {
   *     log.warn({ error }, 'pool could not join; trying again in 5 s')
   *     await setTimeout(5_000)
   *   }
   * }
   * ```
   */
  start(): Promise<void> {
    if (this.#closing) return Promise.reject(new LeaserClosedError('the pool is closed'))
    this.#starting ??= this.#start()
    return this.#starting
  }

  async #start(): Promise<void> {
    const letProcessExit = keepProcessAlive()
    this.#letProcessExit = letProcessExit
    try {
      await this.#join(true)
    } catch (error) {
      // Joining failed before anything was held: forget this start, so the next one is a new try.
      letProcessExit()
      this.#letProcessExit = undefined
      this.#starting = undefined
      throw error
    }
    this.#schedule(await this.#rebalance())
  }

  /**
   * Leaves the group: releases the membership and stops every handler (their unit signal aborts;
   * each may checkpoint), then releases each unit once its handler returned. The others no longer
   * count this member, so they take each unit as it comes free, not after the slowest handler.
   * Bounded by `timeoutMs` (default: the Leaser's ttl), from the call: a handler still running then
   * keeps its lease until it returns, releases the store keeps failing go on after, and store calls
   * of a rebalance still out (a take, a listing) may settle after close resolved (a unit such a take
   * gets is handed back unrun). Close the Leaser, not only the pool, before you close the store's
   * client: a handler still running when the Leaser closes keeps its unit (renewed, so nobody else
   * runs it) until it returns or the Leaser's own close `timeoutMs` passes, and the unit then
   * expires as after a crash, since the handler could no longer checkpoint. Idempotent: once
   * closing, every call returns the first call's promise. Options that are not valid (`timeoutMs`
   * outside 0..2147483647) reject with an `InvalidArgumentError` and change nothing: the pool runs on,
   * and a valid `close()` still closes it.
   *
   * ```ts
   * process.once('SIGTERM', () => void pool.close({ timeoutMs: 10_000 }))
   * ```
   */
  close(options: { timeoutMs?: number } = {}): Promise<void> {
    if (this.#closing) return this.#closing
    // Checked before anything is kept: a close refused for its input must not be the one remembered.
    // Rejected, not thrown, as the Leaser does: `void pool.close(...)` in a signal handler would make
    // a throw an uncaught exception.
    let limit: number
    try {
      if (typeof options !== 'object' || options === null) {
        throw new InvalidArgumentError('close options must be an object')
      }
      const { timeoutMs } = readFields('close options', options, ['timeoutMs'])
      limit = checkNumber('timeoutMs', timeoutMs ?? this.#options.leaser.ttlMs, 0, MAX_TIMER_MS)
    } catch (error) {
      return Promise.reject(error)
    }
    // Kept before the first step: stopping a handler runs its unit signal's listeners, the user's
    // code, whose own close() must get this one.
    return keptBeforeRunning(
      (closing) => {
        this.#closing = closing
      },
      () => this.#close(limit),
    )
  }

  async #close(limit: number): Promise<void> {
    this.#closed.abort(new LeaserClosedError('the pool is closed'))
    // Timers that refuse (reported, as user code's bugs are) stop nothing here: thrown, they left
    // every handler running and the membership held, with every later close() the same rejection.
    this.#clearTimer(this.#timer)
    // Every handler hears it now, and the bound runs from now: a rebalance still out (a slow units
    // function, a store call) neither holds the handlers back nor stretches the bound.
    for (const runner of this.#runners.values()) runner.stop()
    // Out of the group at once: still counted while its units come back one by one, this member
    // would keep the others from taking them until its slowest handler returned.
    const left = this.#membership?.release().catch(() => undefined)
    const { timers } = this.#options
    let timer: unknown
    try {
      await Promise.race([
        (async () => {
          await this.#starting?.catch(() => undefined)
          // A take still out adds no runner (it checks the close after each acquire, and hands back).
          await this.#ticking
          await Promise.allSettled(this.#finishing)
          await left
          // A join or rejoin still out when the close began may have landed since.
          await this.#membership?.release().catch(() => undefined)
        })(),
        new Promise<void>((resolve) => {
          // A limit that cannot be armed has passed, as in Leaser.close().
          try {
            timer = timers.setTimeout(() => resolve(), limit)
          } catch (error) {
            throwLater(error)
            resolve()
          }
        }),
      ])
    } finally {
      this.#clearTimer(timer)
      this.#letProcessExit?.()
    }
  }

  #clearTimer(timer: unknown): void {
    try {
      this.#options.timers.clearTimeout(timer)
    } catch (error) {
      throwLater(error)
    }
  }

  /** Same as {@link close}, for `await using pool = new LeasePool(...)`. */
  [Symbol.asyncDispose](): Promise<void> {
    return this.close()
  }

  /** Never throws: every caller is in the middle of a take, a finish or a rebalance. */
  #emit(event: PoolEvent): void {
    // The listeners as the event found them: one added meanwhile (a "once" re-arming itself) hears
    // from the next event on, as the Leaser's do, not again in this pass, and again, without end.
    for (const listener of [...this.#listeners]) {
      try {
        listener(event)
      } catch (error) {
        throwLater(error)
      }
    }
    if (channel.hasSubscribers) channel.publish(event)
  }

  #rebalanceFailed(error: unknown): void {
    // Once the Leaser is closed every failure is that close's: said once, by #schedule.
    if (!this.#closed.signal.aborted && !this.#options.leaser.closed) {
      this.#emit({ type: 'rebalanceFailed', group: this.group, error })
    }
  }

  async #join(wait: boolean): Promise<void> {
    const { leaser } = this.#options
    this.#membership = await leaser.acquire(this.#keys.member(leaser.holderId), {
      wait,
      signal: this.#closed.signal,
    })
  }

  /**
   * Joins again after losing the membership lease. A member that renewed too late loses it at its
   * local deadline while the store still shows it under this holderId for up to a ttl more: the others
   * count this member meanwhile, so it goes on rebalancing (and tries to join again at the next one)
   * rather than fail every rebalance until that lease expires.
   */
  async #rejoin(): Promise<void> {
    try {
      await this.#join(false)
    } catch (error) {
      // Only this holderId takes this member's key: whoever holds it is this member's lost lease.
      if (!isLeaseHeldError(error)) throw error
    }
  }

  /**
   * The next rebalance, an interval away (less up to a fifth, so members drift apart). A member left
   * short of its share looks again sooner: the units it lacks come free at the donors' own
   * rebalances, or are still free after a take another member won. Bounded, so a member that cannot
   * fill up (units held by someone outside the group, in the shares for their first ttl) falls back
   * to the interval. A take cut at half an interval, having taken some, lists again at once and
   * starts that count again: the cut is there for a fresh listing, not for a rest.
   */
  #schedule(next: NextLook = 'later'): void {
    if (this.#closed.signal.aborted) return
    if (this.#options.leaser.closed) {
      // The Leaser closed under the started pool (pool.close() was not called first): nothing can be
      // joined or taken again, and every rebalance would fail the same way, for good, keeping the
      // process alive. Said once, then the pool closes itself as pool.close() would.
      this.#emit({
        type: 'rebalanceFailed',
        group: this.group,
        error: new LeaserClosedError('the Leaser was closed before the pool: the pool closes'),
      })
      // As a listener's error: rethrown on the next tick (an injected timers that throws in close()).
      this.close().catch(throwLater)
      return
    }
    this.#hurries = next === 'soon' ? this.#hurries + 1 : 0
    let delay = this.#intervalMs
    try {
      delay =
        next === 'now'
          ? 0
          : (this.#intervalMs / (next === 'soon' && this.#hurries <= MAX_HURRIES ? HURRY_FACTOR : 1)) *
            (1 - 0.2 * this.#options.random())
    } catch (error) {
      // A throwing `random` costs this look its jitter, not the loop.
      this.#rebalanceFailed(error)
    }
    try {
      this.#timer = this.#options.timers.setTimeout(() => this.#tick(), delay)
    } catch (error) {
      // Nothing left to schedule with: said, and the pool closes, as under a closed Leaser. Left in
      // the group with no loop, the member was counted in every share and took none of it, and ran
      // on units that had left the set.
      this.#rebalanceFailed(error)
      this.close().catch(throwLater)
    }
  }

  /**
   * One turn of the rebalance loop. `#ticking` never rejects (close awaits it), and whatever throws
   * the loop goes on: a rebalance reports its own failures and looks again an interval on.
   */
  #tick(): void {
    this.#ticking = (async () => {
      let next: NextLook = 'later'
      try {
        next = await this.#rebalance()
      } catch (error) {
        this.#rebalanceFailed(error)
      }
      this.#schedule(next)
    })()
  }

  /**
   * The units wanted now, each once. A static list was read and checked at construction. A function
   * is called once per rebalance and its answer read once; an id in it that cannot be a unit is left
   * out (`unitRefused`) rather than failing the rebalance: one bad id must not keep every other unit
   * from moving, and every member, reading the same answer, leaves out the same ids. An answer that
   * is not an iterable fails the rebalance: read as no units, it would give every unit up.
   */
  async #wanted(): Promise<readonly string[]> {
    const source = this.#units
    if (typeof source !== 'function') return source
    const answer: unknown = await this.#within(
      source(),
      // Clamped: a longer timeout overflows a Node.js timer (the user's own timers too) to 1 ms.
      Math.min(UNITS_TIMEOUT_INTERVALS * this.#intervalMs, MAX_TIMER_MS),
      'options.units() did not answer',
    )
    const readAnswer = readerOf(answer, 'options.units()')
    if (readAnswer === undefined) {
      throw new InvalidArgumentError(
        `options.units() must return an iterable of unit ids, got ${describeValue(answer)}`,
      )
    }
    return readUnitIds(readAnswer, this.#keys, 'options.units()', (unit, error) => {
      if (!this.#closed.signal.aborted) this.#emit({ type: 'unitRefused', group: this.group, unit, error })
    })
  }

  /**
   * `pending`, or a TimeoutError once `limitMs` has passed: a units function that never answers would
   * otherwise stop the member's rebalances for good, without a word.
   */
  async #within<T>(pending: Promise<T> | T, limitMs: number, what: string): Promise<T> {
    const { timers } = this.#options
    let timer: unknown
    try {
      return await Promise.race([
        pending,
        new Promise<never>((_, reject) => {
          timer = timers.setTimeout(
            () => reject(new DOMException(`${what} within ${limitMs} ms`, 'TimeoutError')),
            limitMs,
          )
        }),
      ])
    } finally {
      timers.clearTimeout(timer)
    }
  }

  /**
   * One rebalance: list the group once, stop what is no longer ours to run, then plan and move.
   * Resolves to when this member should look again.
   */
  async #rebalance(): Promise<NextLook> {
    if (this.#closed.signal.aborted) return 'later'
    const { leaser, planner } = this.#options
    try {
      if (!this.#membership?.held && !this.#leftStalled) await this.#rejoin()
      const wanted = await this.#wanted()
      // The units function gets no signal: it may answer after close, and nothing is taken then.
      if (this.#closed.signal.aborted) return 'later'
      const group = await readGroup((options) => this.#list(options), this.#keys)
      // Out of the group or not, a unit no longer wanted (or finished elsewhere) goes back now.
      const wantedSet = new Set(wanted)
      for (const [unit, runner] of this.#runners) {
        // Not one whose handler returned for good: it has nothing to stop, and would hold a slot.
        if (this.#working(runner) && (!wantedSet.has(unit) || group.done.has(unit))) this.#giveUp(runner)
      }
      // A member that left stalled (see STALLED_LOOKS) joins again once it could read the units and
      // the group, and after a time out that doubles with each stall in a row: one that can read but
      // never join would otherwise come back at once, to be given units again.
      if (this.#leftStalled) {
        if (this.#options.timers.now() < this.#rejoinAt) return 'later'
        this.#leftStalled = false
        await this.#rejoin()
      }
      // A unit listed as ours counts as ours only while a runner of ours still works on it. One being
      // handed back is given up; one with no runner was released (or lost) after the listing was
      // read: its runner is gone by the time the reply is, and counted as ours it would put this
      // member above its share again, to give up units it then takes back. Left free in the view, a
      // take of it either finds it free (the release landed) or is refused (held: leases are not
      // reentrant), a miss like any other.
      // A unit whose handler has returned for the last time is leaving too, whatever the listing says:
      // one being marked done is no unit to share at all (counted, this member would give a live
      // unit to make room for it).
      const holders = new Map(group.holders)
      for (const [unit, holder] of group.holders) {
        const runner = this.#runners.get(unit)
        if (holder === leaser.holderId && (runner === undefined || !this.#working(runner)))
          holders.delete(unit)
      }
      const beingMarked = new Set<string>()
      for (const [runner, end] of this.#ending) if (end === 'done') beingMarked.add(runner.id)
      const outsideLong = this.#heldOutsideLong(group)
      const view = viewOf(
        leaser.holderId,
        { ...group, holders },
        wanted.filter((unit) => !beingMarked.has(unit) && !outsideLong.has(unit)),
      )
      // Default bound: one fair share per rebalance, so a joining member is full after two.
      const maxMoves =
        this.#maxMoves ?? Math.max(1, Math.ceil(view.units.length / Math.max(1, view.members.length)))
      // The planner gets a copy: what it does to the view it was handed (sorts, appends, marks the
      // units it means to take as held) is its own, never which units this pool takes or shares.
      const plan = planOf(planner(copyView(view), maxMoves))
      const mine = [...this.#runners.values()].filter((runner) => this.#working(runner))
      const giveUp = Math.min(plan.release, maxMoves)
      for (const runner of firstInOwnOrder(mine, (r) => r.id, leaser.holderId, giveUp, 'giveUp')) {
        this.#giveUp(runner)
      }
      const free = view.units.filter((unit) => !view.holders.has(unit) && !this.#runners.has(unit))
      const toTake = Math.min(plan.take, maxMoves)
      const { taken, cut, failed } = await this.#take(toTake, free)
      // After the takes, so a new unit waits for no clearing of finished ones that left the set. A
      // clearing the store fails is reported, and tried again next time; no stall of this member's.
      await this.#clearDoneMarks([...group.marked].filter((unit) => !wantedSet.has(unit))).catch(
        (error: unknown) => this.#rebalanceFailed(error),
      )
      // One unit the store fails is a miss (see #take); two or more and nothing taken is this member
      // unable to take at all (a permission, a broken connection): a stall, or it stays in the group
      // looking short, the others give it units it cannot take, and a member at its floor takes no
      // free unit while one is short, so those stay free and unrun.
      if (taken === 0 && failed >= 2) {
        this.#takesFailing = true
        await this.#leaveIfStalled()
        return 'later'
      }
      // Takes tried and none failed in the store (taken, or refused as held) show it can take again.
      if (taken > 0 || (toTake > 0 && free.length > 0 && failed === 0)) this.#takesFailing = false
      // Short: below an even share, or missed takes while below its ceiling. A member at its ceiling
      // never hurries: its next look could make it a donor on a view that is only in flux.
      const { lower, upper, free: freeInView, shortfall } = evenShare(view)
      const running = [...this.#runners.values()].filter((runner) => this.#working(runner)).length
      this.#failedLooks = 0
      if (!this.#takesFailing) this.#stalls = 0
      if (running >= upper) return 'later'
      // More free than the short members lack: the rest is for members below their ceiling, who
      // take only once nobody is short. A full interval away, a crashed member's last orphans
      // would wait for it after their leases expired.
      if (running >= lower && taken >= toTake && freeInView <= shortfall) return 'later'
      return cut && taken > 0 ? 'now' : 'soon'
    } catch (error) {
      this.#rebalanceFailed(error)
      await this.#leaveIfStalled()
      return 'later'
    }
  }

  /**
   * Remembers since when each unit is held by someone outside the group (not a listed member, not this
   * one), and returns those held so for more than a ttl: they are left out of the units to share.
   * Counted in, they made every share too big to reach: a member out of the group after stalls keeps
   * running its units for as long as it stays out, and with 30 units, 10 of them its, a member joining
   * a and b (10 each) was owed 10 that nobody could give, and got none for good. Not at once: a
   * crashed member's units come free within a ttl, to be taken, and a live member may be missing from
   * one listing (its membership renewed late); shares shrunk for either would move units twice.
   */
  #heldOutsideLong(group: GroupListing): ReadonlySet<string> {
    const { leaser, timers } = this.#options
    const now = timers.now()
    const members = new Set(group.members)
    const seen = new Map<string, { readonly holder: string; readonly since: number }>()
    const heldLong = new Set<string>()
    for (const [unit, holder] of group.holders) {
      if (holder === leaser.holderId || members.has(holder)) continue
      const known = this.#heldOutside.get(unit)
      const since = known?.holder === holder ? known.since : now
      seen.set(unit, { holder, since })
      if (now - since > leaser.ttlMs) heldLong.add(unit)
    }
    this.#heldOutside = seen
    return heldLong
  }

  /**
   * After a failed rebalance: a member that has failed {@link STALLED_LOOKS} rebalances in a row
   * releases its membership (and keeps running the units it holds), so the others stop giving it units it cannot take.
   * Its next rebalance that reads the units and the group joins again.
   */
  async #leaveIfStalled(): Promise<void> {
    if (++this.#failedLooks < STALLED_LOOKS) return
    const membership = this.#membership
    if (!membership?.held || this.#closed.signal.aborted) return
    this.#membership = undefined
    this.#leftStalled = true
    // The first stall in a row joins again at the next rebalance that can: a passing outage costs
    // nothing more. After that, 1, 3, 7, ... intervals (at most 63).
    this.#rejoinAt = this.#options.timers.now() + this.#intervalMs * (2 ** Math.min(this.#stalls, 6) - 1)
    this.#stalls++
    await membership.release()
  }

  /**
   * Takes up to `count` of the free units; resolves to how many it took, on how many the store
   * failed, and whether it stopped at half an interval with units still to try.
   */
  async #take(count: number, free: string[]): Promise<{ taken: number; failed: number; cut: boolean }> {
    const { leaser } = this.#options
    // Others take from the same free units: a few misses are expected, endless ones are not.
    const toTry = firstInOwnOrder(free, (unit) => unit, leaser.holderId, count > 0 ? count * 2 + 2 : 0)
    const attempts = toTry.length
    // The plan is only as good as the listing it came from: a member that saw 4 of 10 members start
    // would otherwise go on taking 250 units for seconds. Past half an interval it stops and, short,
    // plans again at once from a fresh listing.
    const { timers } = this.#options
    const stopAt = timers.now() + this.#intervalMs / 2
    let next = 0
    let taken = 0
    let inFlight = 0
    let failedTakes = 0
    let failure: { error: unknown } | undefined
    const taker = async (): Promise<void> => {
      // Never more in flight than still wanted, so a rebalance takes at most `count`.
      while (next < attempts && taken + inFlight < count && timers.now() < stopAt) {
        if (this.#closed.signal.aborted) return
        const unit = toTry[next++]!
        let lease: Lease<S>
        inFlight++
        try {
          lease = await leaser.acquire(this.#keys.unit(unit))
        } catch (error) {
          // The store failing one unit's take (one bad row, a hot key) is a miss, reported: failing
          // the rebalance, it would stall every member that tries that unit, and the group with it.
          if (!isLeaseHeldError(error)) {
            failedTakes++
            failure ??= { error }
          }
          continue
        } finally {
          inFlight--
        }
        if (this.#closed.signal.aborted) {
          await this.#handBackUnrun(lease)
          return
        }
        taken++
        this.#run(unit, lease)
      }
    }
    // A few acquires at once: one after another, a share of 100 units at a loaded store's 50 ms a
    // round trip takes 5 s, many rebalance intervals in which this member neither re-plans nor gives.
    const takers = Array.from({ length: Math.min(TAKE_CONCURRENCY, count) }, taker)
    const failed = (await Promise.allSettled(takers)).find((result) => result.status === 'rejected')
    if (failed) throw failed.reason
    if (failure) this.#rebalanceFailed(failure.error)
    const cut = timers.now() >= stopAt && next < attempts && taken < count
    return { taken, failed: failedTakes, cut }
  }

  /**
   * One page of the pool's own listing, bounded as the Leaser bounds its calls (`callTimeoutMs`) and
   * given up when the pool closes: one reply that never comes would otherwise stall the rebalance loop
   * for good, or keep a taken unit held and never run.
   */
  #list(options: ListOptions, stop: AbortSignal = this.#closed.signal): Promise<LeasePage> {
    const { leaser } = this.#options
    const { backend } = leaser
    return leaser[boundedStoreCall]((signal) => backend.list!({ ...options, signal }), stop)
  }

  /**
   * Whether the unit's done mark is set, read once its lease is ours. The listing the take was planned
   * on can be stale, or read page by page at different moments: another member may have run the unit,
   * marked it and released it since. A member sets the mark before it releases the unit, so a read
   * after our acquire succeeded sees it (on a store whose listing is consistent).
   */
  async #markedDone(unit: string): Promise<boolean> {
    const mark = this.#keys.doneMark(unit)
    const page = await this.#list({ prefix: mark, limit: 1 })
    // A prefix sorts before every id it begins, so the mark, if stored, comes first. Held counts as
    // set (see readGroup): a mark being cleared is not yet a unit to run again.
    const first = page.leases[0]
    return first?.workId === mark && (first.released || !first.free)
  }

  /**
   * Whether `runner`'s done mark is set, or held by this member (a mark whose acquire close() cut
   * short, landed: the Leaser releases it, which sets it). Read once the pool closed, so bounded by
   * the call timeout and the unit's lease alone; a read that fails is no mark.
   */
  async #markedByUs(runner: UnitRunner): Promise<boolean> {
    const mark = this.#keys.doneMark(runner.id)
    const page = await this.#list({ prefix: mark, limit: 1 }, runner.lease.signal).catch(() => undefined)
    const first = page?.leases[0]
    if (first?.workId !== mark) return false
    return first.released || (!first.free && first.holderId === this.#options.leaser.holderId)
  }

  /**
   * A unit taken that nobody ran: the pool closed during the take, or the unit's runner found it
   * finished (or could not tell) before its handler's first run. Released only after a clean handoff: a release
   * tells the next member that the last holder ended cleanly, and after a crash nobody has reconciled
   * since. Otherwise left to expire, so the next member still reads `cleanHandoff: false`.
   */
  async #handBackUnrun(lease: Lease<S>): Promise<void> {
    // Known from the acquire where it read the checkpoint, else read while the store side is ours: a
    // user's readCheckpoint() is refused once the Leaser closed, and the unit went back as after a crash.
    const clean = await lease[readHandoff]()
    if (clean === true) await lease.release()
    else lease.abandon()
  }

  #run(unit: string, lease: Lease<S>): void {
    const { handler, timers, random } = this.#options
    const runner = new UnitRunner(
      unit,
      lease,
      handler,
      {
        policy: this.#handlerRetry,
        timers,
        random,
        onError: (error) => this.#emit({ type: 'handlerFailed', group: this.group, unit, error }),
      },
      {
        // A read the store failed is a take it failed: the unit goes back unrun, and that is said.
        isDone: () =>
          this.#markedDone(unit).catch((error: unknown) => {
            this.#rebalanceFailed(error)
            throw error
          }),
        started: () => this.#emit({ type: 'taken', group: this.group, unit }),
      },
    )
    this.#runners.set(unit, runner)
    // A run that ended in a throw (a bug: a handler's throws are retried) still finishes: the
    // unit's lease is left to expire, not renewed for as long as the process lives.
    const finishing = runner.ended.then(
      (end) => this.#finish(runner, end),
      (error: unknown) => {
        throwLater(error)
        // After a handler that threw (see UnitRunner.ended): not one to release as clean.
        return this.#finish(runner, runner.lease.held ? 'failed' : 'lost')
      },
    )
    this.#finishing.add(finishing)
    // leaser.close() before the handler returned (after pool.close() timed out, or at once): the
    // lease stays renewed until #finish has handed it back, never released under a running handler.
    this.#options.leaser[keepWhileWorking](lease, finishing)
    // Both ways: a rejection passed on by `finally` would be one nobody listens to.
    const forget = () => this.#finishing.delete(finishing)
    finishing.then(forget, forget)
  }

  #giveUp(runner: UnitRunner): void {
    this.#handBacks.add(runner)
    // Only a unit reported taken, and not yet ended, is reported given up: one still reading its done
    // mark goes back unrun, one whose handler has returned is being marked done or released already.
    if (runner.running) this.#emit({ type: 'givingUp', group: this.group, unit: runner.id })
  }

  /** Whether `runner` counts as this member's: not given up, and its handler not returned for good. */
  #working(runner: UnitRunner): boolean {
    return !runner.stopping && !this.#ending.has(runner)
  }

  async #finish(runner: UnitRunner, end: UnitEnd): Promise<void> {
    this.#ending.set(runner, end)
    // A finished handler has nothing left to stop: its slot (or its place in the queue) goes to the
    // next now, not once its mark lands, which is retried with no bound while the lease is held.
    if (end === 'done') this.#handBacks.settled(runner)
    try {
      if (end === 'done') {
        // Marked before the unit's lease is released, so no member can take it in between and run it
        // again. A mark that throws (a bug, not the store: those are retried) ends the unit unmarked.
        end = await this.#markDone(runner).catch((error: unknown): UnitEnd => {
          throwLater(error)
          return runner.lease.held ? 'stopped' : 'lost'
        })
        if (end === 'done') this.#emit({ type: 'done', group: this.group, unit: runner.id })
      }
      // Never run: back as a take the pool closed on goes back, without turning a crashed holder's
      // handoff into a clean one.
      if (end === 'unrun') {
        await this.#handBackUnrun(runner.lease)
        // Reported taken, then stopped before its handler ran (a `taken` listener closed the pool):
        // its end is said too, as the unit's end after every `taken`.
        if (runner.reportedTaken) {
          const type = runner.lease[releaseConfirmed] ? 'released' : 'lost'
          this.#emit({ type, group: this.group, unit: runner.id })
        }
      } else if (end === 'lost') this.#emit({ type: 'lost', group: this.group, unit: runner.id })
      // A unit marked done was finished before any close: released (reason 'closed' then), not lost too.
      else if (end === 'failed' || (end !== 'done' && runner.lease.lossError?.reason === 'closed')) {
        // The handler threw as it stopped, or the Leaser closed under it (from then on it could store
        // no checkpoint): its last step may be half done or unrecorded. Left to expire, so the next
        // member reads cleanHandoff: false.
        runner.lease.abandon()
        this.#emit({ type: 'lost', group: this.group, unit: runner.id })
      } else {
        await runner.lease.release()
        // release() never rejects: a release that never landed (FENCED, or the store failing until
        // the deadline) is the lease's loss, and the successor will read cleanHandoff: false.
        if (end === 'stopped') {
          // Not confirmed: lost (FENCED, the deadline), or abandoned by leaser.close() while out.
          const type = runner.lease[releaseConfirmed] ? 'released' : 'lost'
          this.#emit({ type, group: this.group, unit: runner.id })
        }
      }
    } finally {
      this.#runners.delete(runner.id)
      this.#ending.delete(runner)
      this.#handBacks.settled(runner)
    }
  }

  /**
   * Marks a finished unit done; resolves to how its run ends after all. A mark that fails (the store
   * kept failing, or a member clearing the mark holds it) is tried again while the unit's lease is
   * held: released unmarked, the unit would be run again. Until the pool closes: then the unit is
   * released unmarked (`'stopped'`), and run again by whoever takes it, rather than held past close.
   */
  async #markDone(runner: UnitRunner): Promise<UnitEnd> {
    const { leaser, timers, random } = this.#options
    for (let attempt = 0; ; attempt++) {
      try {
        // Cut short by close(): a mark held by a member clearing it kept the unit's lease held, after
        // close() resolved, for as long as the wait's timeout.
        const mark = await leaser.acquire(this.#keys.doneMark(runner.id), {
          wait: true,
          timeoutMs: this.#intervalMs,
          signal: this.#closed.signal,
        })
        await mark.release()
        // release() never rejects: a mark whose release did not land (lost, or the store kept
        // failing it) is no mark, and the unit released after it would be run again.
        if (mark.lossError) throw mark.lossError
        return 'done'
      } catch (error) {
        if (!runner.lease.held) return 'lost'
        // Cut short by close(), the mark's attempt may have landed all the same (the Leaser then
        // releases it, which sets the mark): read, a mark set, or held by this member, is the unit
        // done. Held by another (clearing it), it is not: that one is left to expire. One landing
        // after this read leaves a unit reported released that a member taking it before the mark
        // lands runs again, as any unit may be (at least once), and none after.
        if (this.#closed.signal.aborted) return (await this.#markedByUs(runner)) ? 'done' : 'stopped'
        this.#emit({ type: 'doneMarkFailed', group: this.group, unit: runner.id, error })
      }
      if (this.#closed.signal.aborted) return 'stopped'
      const delay = backoffDelay(this.#handlerRetry, attempt, random)
      await sleep(timers, delay, this.#closed.signal, runner.lease.signal)
      if (!runner.lease.held) return 'lost'
      if (this.#closed.signal.aborted) return 'stopped'
    }
  }

  /**
   * Units left the set: their done marks are taken and left to expire, so `released` (the mark) is
   * gone. Only set marks: one held is being set (cleared at a later look, once set) or being cleared.
   * A few at a time and for half an interval at most, as takes are: the rest at the next rebalance.
   */
  async #clearDoneMarks(units: readonly string[]): Promise<void> {
    const { leaser, timers } = this.#options
    const stopAt = timers.now() + this.#intervalMs / 2
    let next = 0
    const clearSome = async () => {
      while (next < units.length && timers.now() < stopAt && !this.#closed.signal.aborted) {
        const unit = units[next++]!
        try {
          ;(await leaser.acquire(this.#keys.doneMark(unit))).abandon()
        } catch (error) {
          if (!isLeaseHeldError(error)) throw error
        }
      }
    }
    const clearing = Array.from({ length: Math.min(HAND_BACK_CONCURRENCY, units.length) }, clearSome)
    const failed = (await Promise.allSettled(clearing)).find((result) => result.status === 'rejected')
    if (failed) throw failed.reason
  }
}
