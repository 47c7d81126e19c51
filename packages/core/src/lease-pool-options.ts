import type { PoolPlan, PoolView } from './fair-share.js'
import type { Leaser } from './leaser.js'
import type { RetryPolicy } from './retry-policy.js'
import type { Timers } from './timers.js'
import type { PoolHandler } from './unit-runner.js'

/** Options of {@link LeasePool}. */
export interface LeasePoolOptions<S = Uint8Array> {
  /**
   * The runner this member holds its leases with; its holderId is the member's identity and its
   * backend must have the `list` capability (every first-party driver does; `DynamoBackend` once given
   * its `listIndex`).
   *
   * ```ts
   * const pool = new LeasePool({ leaser: new Leaser({ backend, ttlMs: 30_000 }), group: 'imports', units, handler })
   * ```
   */
  leaser: Leaser<S>
  /**
   * The pool's name. Every member of one pool uses the same group; its leases live under
   * `group + '/'` (members `m/`, units `u/`, done marks `d/`), so a group must not be a prefix of
   * another workId in use. Letters, digits and `._:-`, at most 100 characters.
   *
   * ```ts
   * new LeasePool({ leaser, group: 'tenant-reindex', units, handler })
   * ```
   */
  group: string
  /**
   * The units to share: an iterable, or a function the pool calls again before every rebalance (give
   * every member the same answer).
   *
   * An iterable is read once, when the pool is constructed, and that list is kept: a generator or
   * any other one-shot iterable is fine, and changing an array afterwards changes nothing (pass a
   * function for a set that changes). A function's every answer is read once, in the rebalance it
   * was called for; one that has not answered within 10 rebalance intervals fails that rebalance
   * (`rebalanceFailed`), and a member failing 3 rebalances in a row with no unit leaves the group
   * until it can read them again (see docs/pools.md).
   *
   * A unit id is a string that, after the pool's prefix (`group + '/u/'`), makes a valid workId: not
   * empty, no U+0000 or lone surrogates, and the whole workId at most 255 UTF-16 code units (so at
   * most 252 less the group's length). Not a number: `5` is not the unit `'5'`. In an iterable, an id
   * that does not fit makes the constructor throw an `InvalidArgumentError`, before any store call.
   * In a function's answer, such an id is left out of that rebalance and reported as a `unitRefused`
   * event (each rebalance that reads it), and the other units are shared as usual: one bad record in
   * the source must not stop every move. An answer that is not an iterable (`undefined`, a string),
   * or one that throws while it is read, fails that rebalance (`rebalanceFailed`): nothing is given up
   * for it. One read gives at most 1,000,000 ids: an endless iterable is refused, not read forever.
   *
   * ```ts
   * new LeasePool({ leaser, group: 'shards', units: async () => (await listShards()).map((s) => s.id), handler })
   * ```
   */
  units: Iterable<string> | (() => Iterable<string> | Promise<Iterable<string>>)
  /**
   * Works on one unit while this member holds it, with the same `Lease` that `leaser.run` gives
   * (signal, checkpoint, readCheckpoint). Resolving means the unit is finished: it is marked done for
   * the group and not run again while it stays in the units. A mark the store fails to take
   * (`doneMarkFailed`) is tried again (with `handlerRetry`) while the lease is held; if the pool
   * closes or the lease is lost first, the unit is given up unmarked and another member runs it
   * again: a finished unit is run at least once, not exactly once. Throwing retries it (with
   * `handlerRetry`) while the lease is held; a unit given up (or a pool closed) before the retry is
   * left to expire, so the next member reads `cleanHandoff: false`. When `unit.signal` aborts,
   * checkpoint and return.
   *
   * ```ts
   * handler: async (lease, unit) => {
   *   for await (const batch of read(unit.id, { signal: unit.signal })) await lease.checkpoint(batch.cursor)
   * }
   * ```
   */
  handler: PoolHandler<S>
  /**
   * Time between rebalances (each one lists the group once), randomly shortened by up to 20% so
   * members that started together spread out; a member still short of its share after a rebalance
   * looks again after a quarter of it (8 looks in a row at most while it stays short). Default: the Leaser's
   * `renewIntervalMs`.
   *
   * ```ts
   * new LeasePool({ leaser, group, units, handler, rebalanceIntervalMs: 5_000 })
   * ```
   */
  rebalanceIntervalMs?: number
  /**
   * Most units this member takes, and most it gives up, per rebalance: a number in 1..1000000, read
   * once when the pool is constructed. Default: one fair share, `ceil(units / members)`, so a joining
   * member is filled within two rebalances.
   *
   * ```ts
   * new LeasePool({ leaser, group, units, handler, maxMovesPerRebalance: 4 })
   * ```
   */
  maxMovesPerRebalance?: number
  /**
   * Decides how many units to take and to give up from the group's state: the extension point for
   * load-aware balancing (this member taking fewer while it is busy, say). A plan is two counts:
   * which free units are taken, and which of its own are given up, the pool chooses (spread by a
   * hash of this member's holderId and the unit), so a planner that counts only some of the units
   * (the "hot" ones) still gets the others taken, uncounted. Must move units by consent only: it can
   * only ask this member to release its own or take free ones. Default: {@link planFairShare}.
   * Called synchronously, on a copy of the view that is its own to change; its answer is read once,
   * and `take` and `release` must each be a whole number from 0 (`Infinity`: as many as `maxMoves`
   * allows). Anything else (a promise, NaN, a fraction, a string) fails that rebalance with an
   * `InvalidArgumentError`, reported as a `rebalanceFailed` event.
   *
   * ```ts
   * planner: (view, maxMoves) => {
   *   const plan = planFairShare(view, maxMoves)
   *   // Busy: take nothing new this round; still give back what the fair share asks of it.
   *   return isBusy() ? { take: 0, release: plan.release } : plan
   * }
   * ```
   */
  planner?: (view: PoolView, maxMoves: number) => PoolPlan
  /**
   * Backoff between runs of a handler that threw, and between tries of a done mark that failed:
   * full jitter (a random delay up to a cap), as every retry policy here. Default: a cap of 1 s
   * doubling to 30 s. No `maxAttempts` (refused): a handler that throws runs again for as long as
   * the member holds its unit.
   *
   * ```ts
   * new LeasePool({ leaser, group, units, handler, handlerRetry: { initialDelayMs: 100 } })
   * ```
   */
  handlerRetry?: Omit<RetryPolicy, 'maxAttempts'>
  /**
   * Clocks and timers for the rebalance loop. Default: the system's. Checked when the pool is
   * constructed (`now`, `setTimeout` and `clearTimeout` functions, and `wallNow` if given), each
   * function read then, once.
   *
   * ```ts
   * new LeasePool({ leaser, group, units, handler, timers: fakeTime })
   * ```
   */
  timers?: Timers
  /**
   * Randomness in [0, 1) for jitter; an answer outside it (NaN too) counts as 0.5. Default:
   * `Math.random`. Must be a function (checked when the pool is constructed). One that throws while the pool schedules its next rebalance is reported
   * as `rebalanceFailed` and that look comes a whole interval on; one that throws in a unit's
   * backoff (or done-mark retry) ends that run: its error is rethrown on the next tick, as a
   * throwing listener's is, and the unit is released unmarked, to be taken again later.
   *
   * ```ts
   * new LeasePool({ leaser, group, units, handler, random: () => 0.5 })
   * ```
   */
  random?: () => number
}
