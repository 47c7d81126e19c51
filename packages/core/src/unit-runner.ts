import { invoke, sleep } from './abortable.js'
import type { Lease } from './lease.js'
import { backoffDelay, type ResolvedRetryPolicy } from './retry-policy.js'
import type { Timers } from './timers.js'

/** What a pool's handler gets besides the lease: which unit, and when to stop. */
export interface PoolUnit {
  /** The unit's id as the pool was given it (the lease's workId carries the group prefix). */
  readonly id: string
  /**
   * Aborts when the pool wants the unit back (a rebalance gives it to another member, or the pool
   * closes) or the lease is lost. After a rebalance or close the lease is still held: checkpoint, then
   * return, and the successor sees a clean handoff. After a loss `lease.signal` has aborted too.
   * Like `lease.signal`, reading it checks the lease's local deadline first: after a long pause or a
   * host suspend it reports the loss before any timer has run (a signal kept in a variable is not
   * checked again).
   */
  readonly signal: AbortSignal
}

/** The user's work on one unit; a LeasePool calls it for every unit it holds. */
export type PoolHandler<S = Uint8Array> = (lease: Lease<S>, unit: PoolUnit) => Promise<void> | void

/**
 * How a unit's run ended: its handler finished the unit, the pool stopped it, the handler threw as it
 * stopped or was stopped waiting to run again after a throw (`failed`: its last step may be half done), the lease was lost, or the handler never ran
 * (`unrun`: the unit turned out finished, its done mark could not be read, or the pool gave it up or
 * lost it first).
 */
export type UnitEnd = 'done' | 'stopped' | 'failed' | 'lost' | 'unrun'

/** What a runner asks before its handler's first run, and tells once that run starts. */
export interface UnitGate {
  /** Whether the unit is finished already (its done mark set since the listing it was taken on). */
  isDone(): Promise<boolean>
  /** The handler is about to run for the first time. */
  started(): void
}

/**
 * Runs a pool's handler on one held unit until it finishes: again after a failure (with backoff,
 * keeping the lease), never after a stop or a loss.
 */
export class UnitRunner {
  readonly id: string
  readonly lease: Lease<any>
  /**
   * Settles once the handler has returned for the last time. Rejects only if `onError` or the
   * backoff itself throws (a throwing `random`), after a run that threw: the pool still finishes the
   * unit then, as a failed one.
   */
  readonly ended: Promise<UnitEnd>
  readonly #stop = new AbortController()
  #leaving = false
  #running = false
  #reportedTaken = false

  constructor(
    id: string,
    lease: Lease<any>,
    handler: PoolHandler<any>,
    retry: {
      policy: ResolvedRetryPolicy
      timers: Timers
      random: () => number
      /** Told of each failed run before the backoff; must not throw (the pool's never does). */
      onError(error: unknown): void
    },
    gate?: UnitGate,
  ) {
    this.id = id
    this.lease = lease
    this.ended = this.#start(handler, retry, gate)
  }

  /** Whether the pool gave this unit up: its handler was asked to stop, or will be. */
  get stopping(): boolean {
    return this.#leaving || this.#stop.signal.aborted
  }

  /**
   * Whether the handler is running: it started (the gate passed) and has not returned for the last
   * time. A unit given up before or after that is no unit its member was seen working on.
   */
  get running(): boolean {
    return this.#running
  }

  /** Whether the unit was reported `taken` (the gate passed), whether or not its handler then ran. */
  get reportedTaken(): boolean {
    return this.#reportedTaken
  }

  /** Counts the unit as given up before its handler is asked to stop (see `HandBackQueue`). */
  leave(): void {
    this.#leaving = true
  }

  /** Asks the handler to stop: its unit signal aborts while the lease stays held. */
  stop(): void {
    this.#stop.abort(new DOMException('the pool gave this unit to another member', 'AbortError'))
  }

  /**
   * Asks the gate before the first run, once the lease is ours: the unit may have been finished since
   * the listing it was taken on. Anything but a clear "not done", with the lease still held and the
   * unit still wanted, ends it `unrun`: a check that failed too, so the unit goes back, never runs
   * twice.
   */
  async #start(
    handler: PoolHandler<any>,
    retry: ConstructorParameters<typeof UnitRunner>[3],
    gate: UnitGate | undefined,
  ): Promise<UnitEnd> {
    if (gate) {
      const done = await gate.isDone().catch(() => undefined)
      // Given up while the mark was read (queued to stop, or stopped): never started.
      if (done !== false || !this.lease.held || this.stopping) return 'unrun'
    }
    this.#running = true
    try {
      if (gate) {
        this.#reportedTaken = true
        gate.started()
      }
      // A `taken` listener may have closed the pool: no handler starts after close().
      if (this.stopping || !this.lease.held) return 'unrun'
      return await this.#run(handler, retry)
    } finally {
      this.#running = false
    }
  }

  async #run(
    handler: PoolHandler<any>,
    { policy, timers, random, onError }: ConstructorParameters<typeof UnitRunner>[3],
  ): Promise<UnitEnd> {
    const lease = this.lease
    const signal = AbortSignal.any([this.#stop.signal, lease.signal])
    // Read through the lease each time, as `lease.signal` is: that read checks the local deadline
    // first, so after a host suspend (the monotonic clock stood still, the store's did not) the unit's
    // signal reports the loss at once, not when the next timer happens to run.
    const unit: PoolUnit = Object.freeze({
      id: this.id,
      get signal() {
        void lease.signal
        return signal
      },
    })
    for (let attempt = 0; ; attempt++) {
      let failure: { error: unknown } | undefined
      try {
        await invoke(() => handler(this.lease, unit))
      } catch (error) {
        failure = { error }
      }
      // A handler that returns because it was asked to stop has not finished the unit. One that threw
      // anything but the abort is reported, lost lease or not: its bug would otherwise go unseen.
      if (!this.lease.held) {
        // The loss itself (a call refused by it, or its signal's abort) is no bug of the handler's,
        // whichever of the stop and the loss came first.
        if (failure && !isAbort(failure.error, signal) && !isAbort(failure.error, lease.signal)) {
          onError(failure.error)
        }
        return 'lost'
      }
      if (this.#stop.signal.aborted) {
        // Work given `unit.signal` rejects with its abort: that is how such a handler stops.
        if (!failure || isAbort(failure.error, signal)) return 'stopped'
        // Not retried (the pool is done with the unit), but not hidden either: reported, and the
        // unit goes back as after a crash, as its handler did not end as a stopped one must.
        onError(failure.error)
        return 'failed'
      }
      if (!failure) return 'done'
      onError(failure.error)
      await sleep(timers, backoffDelay(policy, attempt, random), signal)
      if (!this.lease.held) return 'lost'
      // Stopped before it could run again: the step that threw may be half done, or (after a crashed
      // holder) nothing reconciled yet. Released, the unit would pass for a clean handoff.
      if (this.#stop.signal.aborted) return 'failed'
    }
  }
}

/**
 * Whether `error` is the abort of `signal`: its reason itself (as fetch rejects), or an `AbortError`
 * whose cause it is (as `timers/promises` and `events.once` reject). Not any `AbortError`: one of the
 * handler's own controllers, cutting a step short, is a step that failed.
 */
function isAbort(error: unknown, signal: AbortSignal): boolean {
  if (error === signal.reason) return true
  if (typeof error !== 'object' || error === null) return false
  try {
    const { name, cause } = error as { name?: unknown; cause?: unknown }
    return name === 'AbortError' && cause === signal.reason
  } catch {
    return false
  }
}
