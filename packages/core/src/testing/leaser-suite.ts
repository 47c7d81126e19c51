import assert from 'node:assert/strict'
import { monitorEventLoopDelay } from 'node:perf_hooks'
import { inspect } from 'node:util'
import {
  againAfterHostClockStep,
  type Backend,
  type CallOptions,
  type CheckpointOptions,
  type Clock,
  isLeaseHeldError,
  type LeaseRecord,
  raceAbort,
  systemClock,
} from '@worklease/spec'
import type { Lease } from '../lease.js'
import { isLeaseLostError, type LeaseLostError } from '../lease-lost-error.js'
import { Leaser } from '../leaser.js'
import type { LeaserOptions } from '../leaser-options.js'
import type { Timers } from '../timers.js'

/**
 * Fresh isolated storage per case, structurally the testkit's `BackendHarness`: `open` returns a
 * backend over it as a separate process would have it.
 */
export interface LeaserSuiteHarness {
  open(options: { readonly clock: Clock }): Backend | Promise<Backend>
  close(): Promise<void>
}

/** Options of {@link leaserSuite}. */
export interface LeaserSuiteOptions {
  /**
   * Shown in the suite's name.
   *
   * ```ts
   * leaserSuite({ name: 'postgres', describe, test, factory })
   * ```
   */
  name: string
  /**
   * vitest's (or jest's) `describe`.
   *
   * ```ts
   * import { describe, test } from 'vitest'
   * ```
   */
  describe: (name: string, body: () => void) => void
  /**
   * vitest's (or jest's) `test`; the third argument is the case's timeout in milliseconds.
   *
   * ```ts
   * import { describe, test } from 'vitest'
   * ```
   */
  test: (name: string, body: () => Promise<void>, timeoutMs?: number) => void
  /**
   * Makes a fresh harness per case; the testkit's `BackendFactory` fits.
   *
   * ```ts
   * const factory = () => {
   *   const store = new MemoryStore()
   *   return { open: ({ clock }) => new MemoryBackend({ store, clock }), close: async () => {} }
   * }
   * ```
   */
  factory: () => LeaserSuiteHarness | Promise<LeaserSuiteHarness>
  /**
   * The ttl of every lease, in real milliseconds. Shorter is faster; it must comfortably exceed a
   * few round trips to the store. Default: 1000.
   *
   * ```ts
   * leaserSuite({ name: 'dynamodb-local', describe, test, factory, ttlMs: 2_000 })
   * ```
   */
  ttlMs?: number
}

/** The Leaser's safety margin in this suite: wide, as real stores on a busy machine answer slowly at times. */
const safetyMarginOf = (ttlMs: number) => Math.floor(ttlMs * 0.3)

/** How often the event-loop monitor samples; a bound that must not fail on a stall adds it too. */
const STALL_RESOLUTION_MS = 10
const delay = (ms: number) => new Promise<void>((resolve) => setTimeout(resolve, ms))

/** A call that never answers: rejects with the signal's reason once it aborts. */
const hang = (signal: AbortSignal | undefined) =>
  new Promise<never>((_, reject) => {
    signal?.addEventListener('abort', () => reject(signal.reason), { once: true })
  })

/**
 * A backend whose renews can be made to hang (an unreachable store), whose release replies can be
 * slowed down or lost after the release was applied, and whose calls are counted.
 */
class Gate implements Backend {
  hangRenews = false
  /** Delay between a release being applied by the store and its reply reaching the caller. */
  releaseReplyDelayMs = 0
  /** How many of the next releases are applied but answered with an error (a lost reply). */
  loseReleaseReplies = 0
  /** How many of the next acquires are applied but answered with an error (a lost reply). */
  loseAcquireReplies = 0
  /** Checkpoints hang until their signal aborts (a store that takes renews but not checkpoints). */
  hangCheckpoints = false
  readonly calls = { acquire: 0, renew: 0, checkpoint: 0, release: 0 }
  constructor(readonly inner: Backend) {}
  get capabilities() {
    return this.inner.capabilities
  }
  async acquire(
    workId: string,
    holderId: string,
    ttlMs: number,
    options?: CallOptions,
  ): Promise<LeaseRecord> {
    this.calls.acquire++
    const record = await this.inner.acquire(workId, holderId, ttlMs, options)
    if (this.loseAcquireReplies > 0) {
      this.loseAcquireReplies--
      throw Object.assign(new Error('acquire reply lost'), { code: 'ECONNRESET' })
    }
    return record
  }
  checkpoint(record: LeaseRecord, state: Uint8Array, ttlMs: number, options?: CheckpointOptions) {
    this.calls.checkpoint++
    if (!this.hangCheckpoints) return this.inner.checkpoint(record, state, ttlMs, options)
    return hang(options?.signal)
  }
  renew(record: LeaseRecord, ttlMs: number, options?: CallOptions): Promise<void> {
    this.calls.renew++
    if (!this.hangRenews) return this.inner.renew(record, ttlMs, options)
    return hang(options?.signal)
  }
  async release(record: LeaseRecord, options?: CallOptions): Promise<void> {
    this.calls.release++
    await this.inner.release(record, options)
    if (this.releaseReplyDelayMs > 0) await delay(this.releaseReplyDelayMs)
    if (this.loseReleaseReplies > 0) {
      this.loseReleaseReplies--
      throw Object.assign(new Error('release reply lost'), { code: 'ECONNRESET' })
    }
  }
  readCheckpoint(record: LeaseRecord, options?: CallOptions) {
    return this.inner.readCheckpoint(record, options)
  }
}

/** Counts the renewals a Leaser sends, one by one or in batches (only where `inner` has renewMany). */
class RenewCounter implements Backend {
  renews = 0
  batches = 0
  readonly renewMany?: Backend['renewMany']
  #inFlight = 0
  /** While set, renewals wait for it before they are sent. */
  #paused: Promise<void> | undefined
  #onIdle: (() => void) | undefined
  constructor(readonly inner: Backend) {
    const renewMany = inner.renewMany?.bind(inner)
    if (renewMany) {
      this.renewMany = (records, ttlMs, options) => {
        this.batches++
        return this.#renewal(() => renewMany(records, ttlMs, options))
      }
    }
  }
  /** Runs `write` with no renewal in flight: renewals sent meanwhile wait until it settled. */
  async betweenRenewals<T>(write: () => Promise<T>): Promise<T> {
    let resume!: () => void
    this.#paused = new Promise((resolve) => {
      resume = resolve
    })
    try {
      while (this.#inFlight > 0) {
        await new Promise<void>((resolve) => {
          this.#onIdle = resolve
        })
      }
      return await write()
    } finally {
      this.#paused = undefined
      resume()
    }
  }
  async #renewal<T>(send: () => Promise<T>): Promise<T> {
    while (this.#paused) await this.#paused
    this.#inFlight++
    try {
      return await send()
    } finally {
      if (--this.#inFlight === 0) this.#onIdle?.()
    }
  }
  get capabilities() {
    return this.inner.capabilities
  }
  acquire(workId: string, holderId: string, ttlMs: number, options?: CallOptions) {
    return this.inner.acquire(workId, holderId, ttlMs, options)
  }
  checkpoint(record: LeaseRecord, state: Uint8Array, ttlMs: number, options?: CheckpointOptions) {
    return this.inner.checkpoint(record, state, ttlMs, options)
  }
  renew(record: LeaseRecord, ttlMs: number, options?: CallOptions) {
    this.renews++
    return this.#renewal(() => this.inner.renew(record, ttlMs, options))
  }
  release(record: LeaseRecord, options?: CallOptions) {
    return this.inner.release(record, options)
  }
  readCheckpoint(record: LeaseRecord, options?: CallOptions) {
    return this.inner.readCheckpoint(record, options)
  }
}

/**
 * A backend whose first acquire reaches the store only after `delayMs` (a slow network or a busy pool)
 * and still takes the lease then, while the call honours its signal the way drivers do: it rejects at
 * once with the abort reason.
 */
class LateAcquire implements Backend {
  /** Settles when the delayed acquire has been applied by the store (or failed there). */
  landed: Promise<unknown> = Promise.resolve()
  #slow = true
  constructor(
    readonly inner: Backend,
    readonly delayMs: number,
  ) {}
  get capabilities() {
    return this.inner.capabilities
  }
  acquire(workId: string, holderId: string, ttlMs: number, options?: CallOptions): Promise<LeaseRecord> {
    if (!this.#slow) return this.inner.acquire(workId, holderId, ttlMs, options)
    this.#slow = false
    // The statement is on its way: aborting no longer stops it, whatever the signal says.
    const statement = delay(this.delayMs).then(() => this.inner.acquire(workId, holderId, ttlMs))
    this.landed = statement.catch(() => undefined)
    return raceAbort(statement, options?.signal)
  }
  checkpoint(record: LeaseRecord, state: Uint8Array, ttlMs: number, options?: CallOptions) {
    return this.inner.checkpoint(record, state, ttlMs, options)
  }
  renew(record: LeaseRecord, ttlMs: number, options?: CallOptions) {
    return this.inner.renew(record, ttlMs, options)
  }
  release(record: LeaseRecord, options?: CallOptions) {
    return this.inner.release(record, options)
  }
  readCheckpoint(record: LeaseRecord, options?: CallOptions) {
    return this.inner.readCheckpoint(record, options)
  }
}

/** Real timers whose clock runs `rate` times as fast as real time (rate < 1: a slow clock). */
function scaledTimers(rate: number): Timers {
  const origin = performance.now()
  return {
    now: () => origin + (performance.now() - origin) * rate,
    setTimeout: (callback, ms) => setTimeout(callback, Math.max(0, ms) / rate).unref(),
    clearTimeout: (handle) => clearTimeout(handle as ReturnType<typeof setTimeout>),
  }
}

/**
 * The runner's behaviour over a real backend, with short real ttls: renewal keeps a lease past its
 * ttl, waiting for a release or an expiry, clean and unclean handoffs with checkpoints, loss declared
 * before a successor can get in, the backend's own FENCED/LEASE_EXPIRED stopping the lease, close.
 * Runs with vitest's `describe`/`test` and asserts with `node:assert`.
 *
 * ```ts
 * import { leaserSuite } from '@worklease/core/testing'
 * import { describe, test } from 'vitest'
 * leaserSuite({ name: 'postgres', describe, test, factory })
 * ```
 */
export function leaserSuite(options: LeaserSuiteOptions): void {
  const { describe, factory } = options
  // Every case runs on real time against a store's clock: one the host's wall clock stepped under is
  // run again, and says why (`againAfterHostClockStep` in spec).
  const test = (name: string, body: () => Promise<void>, timeoutMs?: number) =>
    options.test(name, () => againAfterHostClockStep('leaserSuite', name, body), timeoutMs)
  const ttlMs = options.ttlMs ?? 1_000
  const caseTimeout = ttlMs * 12 + 10_000

  const leaserOptions = (
    backend: Backend,
    holderId: string,
    extra: Partial<LeaserOptions> = {},
    ttl = ttlMs,
  ): LeaserOptions => ({
    backend,
    holderId,
    ttlMs: ttl,
    safetyMarginMs: safetyMarginOf(ttl),
    renewIntervalMs: Math.floor(ttl / 5),
    retry: { initialDelayMs: Math.max(1, Math.floor(ttl / 50)), maxDelayMs: Math.floor(ttl / 5) },
    ...extra,
  })

  const withHarness = (body: (open: () => Promise<Backend>) => Promise<void>) => async () => {
    const harness = await factory()
    try {
      await body(async () => harness.open({ clock: systemClock }))
    } finally {
      await harness.close()
    }
  }

  const workId = (label: string) => `leaser-suite-${label}-${Math.random().toString(36).slice(2, 10)}`

  describe(`Leaser behaviour: ${options.name}`, () => {
    test(
      'renews a lease past several ttls, then releases it for the next holder',
      withHarness(async (open) => {
        const id = workId('renew')
        const a = new Leaser(leaserOptions(await open(), 'suite-a'))
        const other = await open()
        try {
          const lease = await a.acquire(id)
          await delay(ttlMs * 3)
          assert.equal(lease.held, true, 'the lease was renewed in the background')
          await assert.rejects(other.acquire(id, 'suite-b', ttlMs), isLeaseHeldError)
          await lease.release()
          const next = await other.acquire(id, 'suite-b', ttlMs)
          assert.ok(next.fencingToken > lease.fencingToken)
          assert.equal((await other.readCheckpoint(next)).cleanHandoff, true)
        } finally {
          await a.close()
        }
      }),
      caseTimeout,
    )

    test(
      'many leases: renewed together where the backend has renewMany; one fenced behind its back ends alone',
      withHarness(async (open) => {
        const backend = new RenewCounter(await open())
        const batched = backend.capabilities.renewMany !== undefined && backend.renewMany !== undefined
        // Twice the suite's ttl: without renewMany, 20 leases are 20 renewals per interval, and a
        // loaded machine's slow answers must not read as a lease the Leaser failed to keep.
        const longTtlMs = ttlMs * 2
        const a = new Leaser(leaserOptions(backend, 'suite-a', {}, longTtlMs))
        const other = await open()
        const heldOrWhy = (lease: Lease) =>
          lease.held ? 'held' : `lost (${(lease.lossError as LeaseLostError | undefined)?.reason})`
        try {
          const leases = await Promise.all(
            Array.from({ length: 20 }, (_, i) => a.acquire(workId(`many-${i}`))),
          )
          await delay(longTtlMs * 2)
          for (const lease of leases) assert.equal(heldOrWhy(lease), 'held', `${lease.workId} stayed renewed`)
          if (batched) {
            assert.equal(backend.renews, 0, 'no single renews where the backend has renewMany')
            // About 10 renew intervals in 2 ttls, 200 renewals: jitter spreads them over a few windows
            // per interval, still far fewer calls than renewals.
            assert.ok(backend.batches >= 5 && backend.batches <= 100, `renewMany calls: ${backend.batches}`)
          } else {
            assert.ok(backend.renews >= 20 * 5, `single renews without renewMany: ${backend.renews}`)
          }
          const victim = leases[7]!
          // On a store whose writes from two connections are not atomic with each other (FerretDB
          // 1.x reads, then writes), a renewal that read the lease before this release and writes
          // after it can undo the release. That race is the testkit's cross-connection cases' to
          // judge, and they skip such a store; here the release goes between renewals.
          const releaseBehindItsBack = () => other.release(victim.record)
          if (backend.capabilities.crossConnectionAtomic) await releaseBehindItsBack()
          else await backend.betweenRenewals(releaseBehindItsBack)
          await delay(longTtlMs)
          assert.equal(heldOrWhy(victim), 'lost (fenced)', 'the lease released behind its back was lost')
          for (const lease of leases) {
            if (lease !== victim) assert.equal(heldOrWhy(lease), 'held', `${lease.workId} is not affected`)
          }
        } finally {
          await a.close()
        }
      }),
      caseTimeout,
    )

    test(
      'wait: gets the lease as soon as the holder releases it',
      withHarness(async (open) => {
        const id = workId('wait')
        const a = new Leaser(leaserOptions(await open(), 'suite-a'))
        const b = new Leaser(leaserOptions(await open(), 'suite-b'))
        try {
          const held = await a.acquire(id)
          const waiting = b.acquire(id, { wait: true, timeoutMs: ttlMs * 5 })
          await delay(ttlMs / 2)
          await held.release()
          const lease = await waiting
          assert.ok(lease.fencingToken > held.fencingToken)
          assert.equal((await lease.readCheckpoint()).cleanHandoff, true)
        } finally {
          await Promise.all([a.close(), b.close()])
        }
      }),
      caseTimeout,
    )

    test(
      'wait with timeoutMs: rejects with LEASE_HELD while the lease stays held',
      withHarness(async (open) => {
        const id = workId('timeout')
        const a = new Leaser(leaserOptions(await open(), 'suite-a'))
        const b = new Leaser(leaserOptions(await open(), 'suite-b'))
        try {
          await a.acquire(id)
          await assert.rejects(b.acquire(id, { wait: true, timeoutMs: ttlMs * 2 }), isLeaseHeldError)
        } finally {
          await Promise.all([a.close(), b.close()])
        }
      }),
      caseTimeout,
    )

    test(
      'checkpoints hand over to the next run; a failed run left to expire is an unclean handoff',
      withHarness(async (open) => {
        const id = workId('handoff')
        const a = new Leaser(leaserOptions(await open(), 'suite-a'))
        const b = new Leaser(leaserOptions(await open(), 'suite-b'))
        const encode = (text: string) => new TextEncoder().encode(text)
        const decode = (state: Uint8Array | null) => (state === null ? null : new TextDecoder().decode(state))
        try {
          const failure = new Error('step 2 failed')
          await assert.rejects(
            a.run(
              id,
              async (lease) => {
                assert.deepEqual(await lease.readCheckpoint(), {
                  state: null,
                  bytes: null,
                  cleanHandoff: true,
                })
                await lease.checkpoint(encode('step 1'))
                throw failure
              },
              { onError: 'expire' },
            ),
            (error) => error === failure,
          )
          const seen = await b.run(
            id,
            async (lease) => {
              const read = await lease.readCheckpoint()
              await lease.checkpoint(encode('step 2'))
              return { state: decode(read.state), cleanHandoff: read.cleanHandoff }
            },
            { wait: true, timeoutMs: ttlMs * 5 },
          )
          assert.deepEqual(seen, { state: 'step 1', cleanHandoff: false })
          const last = await a.run(id, async (lease) => {
            const read = await lease.readCheckpoint()
            return { state: decode(read.state), cleanHandoff: read.cleanHandoff }
          })
          assert.deepEqual(last, { state: 'step 2', cleanHandoff: true })
        } finally {
          await Promise.all([a.close(), b.close()])
        }
      }),
      caseTimeout,
    )

    test(
      'store unreachable past the ttl: lost before a successor can acquire, never re-acquired',
      withHarness(async (open) => {
        const id = workId('unreachable')
        const gate = new Gate(await open())
        const a = new Leaser(leaserOptions(gate, 'suite-a'))
        const other = await open()
        // A loaded machine delays the abort's listener, or the successor's request, past the store's
        // expiry: measured, so that only what the stall cannot explain fails the case.
        const lag = monitorEventLoopDelay({ resolution: STALL_RESOLUTION_MS })
        lag.enable()
        try {
          const acquireStartedAt = performance.now()
          const lease = await a.acquire(id)
          gate.hangRenews = true
          const lost = new Promise<{ atLoss: unknown; abortedAt: number; repliedAt: number }>((resolve) =>
            lease.signal.addEventListener('abort', () => {
              // Right at the local deadline the store must still refuse a successor.
              const abortedAt = performance.now()
              const answered = (atLoss: unknown) =>
                resolve({ atLoss, abortedAt, repliedAt: performance.now() })
              other.acquire(id, 'suite-b', ttlMs).then(answered, answered)
            }),
          )
          const { atLoss, abortedAt, repliedAt } = await lost
          // The stall that matters ended with the successor's reply (finally disables it again, harmlessly).
          lag.disable()
          if (!isLeaseHeldError(atLoss)) {
            // The store's expiry is at least a ttl after this process sent the acquire: a successor
            // answered before then got in while the lease was live.
            const earliestExpiry = acquireStartedAt + ttlMs
            assert.ok(
              repliedAt >= earliestExpiry,
              `a successor got in ${Math.round(earliestExpiry - repliedAt)} ms before the lease could expire: ${inspect(atLoss)}`,
            )
            // Answered after that, the successor proves nothing; the loss must still have been due a
            // good part of the safety margin before the expiry, the longest stall seen aside.
            const stallMs = lag.max / 1e6 + STALL_RESOLUTION_MS
            const dueBy = earliestExpiry - safetyMarginOf(ttlMs) / 2
            assert.ok(
              abortedAt - stallMs <= dueBy,
              `the loss was declared ${Math.round(abortedAt - acquireStartedAt)} ms into a ${ttlMs} ms lease, due by ${Math.round(dueBy - acquireStartedAt)} (stall ${Math.round(stallMs)} ms), and a successor got in: ${inspect(atLoss)}`,
            )
            console.log(
              `leaserSuite: the successor's acquire landed after the expiry (event-loop stall ${Math.round(stallMs)} ms, round trip ${Math.round(repliedAt - abortedAt)} ms); judged by when the loss was due instead`,
            )
          }
          assert.equal((lease.signal.reason as LeaseLostError).reason, 'deadline')
          gate.hangRenews = false
          const b = new Leaser(leaserOptions(other, 'suite-b'))
          const next = await b.acquire(id, { wait: true, timeoutMs: ttlMs * 5 })
          assert.ok(next.fencingToken > lease.fencingToken)
          assert.equal((await next.readCheckpoint()).cleanHandoff, false)
          await delay(ttlMs)
          assert.equal(gate.calls.acquire, 1, 'the lost holder never re-acquires')
          await b.close()
        } finally {
          lag.disable()
          await a.close()
        }
      }),
      caseTimeout,
    )

    test(
      "the backend's FENCED or LEASE_EXPIRED stops the lease at once (a holder whose clock runs slow)",
      withHarness(async (open) => {
        const id = workId('fenced')
        const gate = new Gate(await open())
        // Its clock runs at 1/8 speed: it renews every 1.6 ttl of real time, too late, and its local
        // deadline would come far too late too; only the backend's answer can stop it.
        const slow = new Leaser(leaserOptions(gate, 'suite-slow', { timers: scaledTimers(1 / 8) }))
        const b = new Leaser(leaserOptions(await open(), 'suite-b'))
        try {
          const lease = await slow.acquire(id)
          const next = await b.acquire(id, { wait: true, timeoutMs: ttlMs * 5 })
          assert.ok(next.fencingToken > lease.fencingToken)
          await new Promise((resolve) => lease.signal.addEventListener('abort', resolve))
          const reason = lease.signal.reason as LeaseLostError
          assert.ok(isLeaseLostError(reason))
          assert.ok(
            reason.reason === 'fenced' || reason.reason === 'expired',
            `unexpected reason ${reason.reason}`,
          )
          assert.equal(gate.calls.acquire, 1, 'the fenced holder never re-acquires')
          assert.equal(next.held, true)
        } finally {
          await Promise.all([slow.close(), b.close()])
        }
      }),
      caseTimeout,
    )

    test(
      'an acquire abandoned by its timeout that still lands is released, not left to expire',
      withHarness(async (open) => {
        const id = workId('late-acquire')
        const callTimeoutMs = Math.floor(ttlMs / 5)
        const late = new LateAcquire(await open(), callTimeoutMs * 2)
        const a = new Leaser(leaserOptions(late, 'suite-a', { callTimeoutMs, retry: { maxAttempts: 1 } }))
        const b = new Leaser(leaserOptions(await open(), 'suite-b'))
        try {
          await assert.rejects(a.acquire(id), (error: Error) => error.name === 'TimeoutError')
          await late.landed
          // Left to expire, the orphan would block everyone for a whole ttl from now.
          const next = await b.acquire(id, { wait: true, timeoutMs: Math.floor(ttlMs * 0.7) })
          assert.equal((await next.readCheckpoint()).cleanHandoff, true, 'the orphan was released')
          assert.equal(a.leases.length, 0)
        } finally {
          await Promise.all([a.close(), b.close()])
        }
      }),
      caseTimeout,
    )

    test(
      'close ends leases locally first: a successor acquiring during close finds the old callback stopped',
      withHarness(async (open) => {
        const id = workId('close-order')
        const gate = new Gate(await open())
        // The store applies the release at once but its reply takes a while: a successor can get in
        // long before the release call returns.
        gate.releaseReplyDelayMs = Math.floor(ttlMs * 0.3)
        const a = new Leaser(leaserOptions(gate, 'suite-a'))
        const other = await open()
        let lease: Lease | undefined
        let callbackSettled = false
        let started!: () => void
        const running = a
          .run(id, async (l) => {
            lease = l
            started()
            await new Promise((resolve) => l.signal.addEventListener('abort', resolve, { once: true }))
            await delay(Math.floor(ttlMs * 0.1)) // winds down its current step
            callbackSettled = true
          })
          .catch((error: unknown) => error)
        await new Promise<void>((resolve) => {
          started = resolve
        })
        const closing = a.close()
        let atTakeover: { aborted: boolean; held: boolean; callbackSettled: boolean } | undefined
        const giveUpAt = performance.now() + ttlMs * 3
        while (!atTakeover && performance.now() < giveUpAt) {
          try {
            await other.acquire(id, 'suite-b', ttlMs)
            atTakeover = { aborted: lease!.signal.aborted, held: lease!.held, callbackSettled }
          } catch (error) {
            if (!isLeaseHeldError(error)) throw error
            await delay(2)
          }
        }
        await closing
        const error = await running
        assert.deepEqual(atTakeover, { aborted: true, held: false, callbackSettled: true })
        assert.ok(isLeaseLostError(error) && error.reason === 'closed', `run rejected with ${String(error)}`)
      }),
      caseTimeout,
    )

    test(
      'a release retried after a lost reply that answers FENCED is not a loss: run resolves',
      withHarness(async (open) => {
        const id = workId('release-retried')
        const gate = new Gate(await open())
        gate.loseReleaseReplies = 1
        const a = new Leaser(leaserOptions(gate, 'suite-a'))
        const other = await open()
        try {
          const result = await a.run(id, async () => 'done')
          assert.equal(result, 'done')
          assert.equal(gate.calls.release, 2)
          const next = await other.acquire(id, 'suite-b', ttlMs)
          assert.equal((await other.readCheckpoint(next)).cleanHandoff, true)
        } finally {
          await a.close()
        }
      }),
      caseTimeout,
    )

    test(
      "a waiter takes over a crashed holder's lease at its ttl, not at the backoff's whim",
      withHarness(async (open) => {
        const id = workId('takeover')
        const other = await open()
        await other.acquire(id, 'suite-crashed', ttlMs) // never renewed, never released
        // After the reply: the lease expires a ttl after the store wrote it, which is before this. (Taken
        // before the call, the first query's connection set-up counted against the waiter.)
        const crashedAt = performance.now()
        // The slowest of three round trips: one sample on a loaded machine (a store in a child process
        // starved of CPU beside other suites) can be quicker than the waiter's later ones.
        let rttMs = 0
        for (let probe = 0; probe < 3; probe++) {
          const rttStart = performance.now()
          await assert.rejects(other.acquire(id, 'suite-probe', ttlMs), isLeaseHeldError)
          rttMs = Math.max(rttMs, performance.now() - rttStart)
        }
        // The default retry policy, whose backoff grows to 2 s, far past a short ttl, with its delays
        // near their caps (random 0.99): what a waiter's backoff does at its worst.
        const b = new Leaser(leaserOptions(await open(), 'suite-b', { retry: {}, random: () => 0.99 }))
        // Timers fire late by however long this process's event loop was blocked (a loaded machine
        // runs other suites beside this one): measured, and added to the bound.
        const lag = monitorEventLoopDelay({ resolution: STALL_RESOLUTION_MS })
        lag.enable()
        try {
          const lease = await b.acquire(id, { wait: true, timeoutMs: ttlMs * 5 })
          const tookMs = performance.now() - crashedAt
          assert.equal(lease.fencingToken, 2n)
          if (other.capabilities.reportsHolder) {
            // Round trips measured again right after the takeover too: a store starved of CPU while
            // the waiter waited (the event-loop stall below does not see that) answers its last
            // calls slower than the probes before it did.
            for (let probe = 0; probe < 3; probe++) {
              const rttStart = performance.now()
              await assert.rejects(other.acquire(id, 'suite-probe', ttlMs), isLeaseHeldError)
              rttMs = Math.max(rttMs, performance.now() - rttStart)
            }
            // ttl + 2 round trips + the jitter (25 ms) + 50 ms for timers, + the longest stall seen.
            const lagMs = lag.max / 1e6
            const boundMs = ttlMs + 2 * rttMs + 75 + lagMs
            assert.ok(
              tookMs <= boundMs,
              `took over after ${Math.round(tookMs)} ms, bound ${Math.round(boundMs)} (event-loop stall ${Math.round(lagMs)} ms)`,
            )
          }
        } finally {
          lag.disable()
          await b.close()
        }
      }),
      caseTimeout,
    )

    test(
      'an acquire whose reply was lost uses the lease it took (backends that report the holder)',
      withHarness(async (open) => {
        const id = workId('lost-acquire-reply')
        const gate = new Gate(await open())
        if (!gate.capabilities.reportsHolder) return // without a holder, the lease expires after its ttl
        gate.loseAcquireReplies = 1
        const a = new Leaser(leaserOptions(gate, 'suite-a'))
        const other = await open()
        try {
          const lease = await a.acquire(id)
          assert.equal(lease.held, true)
          assert.equal(gate.calls.acquire, 2)
          await assert.rejects(other.acquire(id, 'suite-b', ttlMs), isLeaseHeldError)
          await lease.release()
          const next = await other.acquire(id, 'suite-b', ttlMs)
          assert.equal(next.fencingToken, lease.fencingToken + 1n)
          assert.equal((await other.readCheckpoint(next)).cleanHandoff, true)
        } finally {
          await a.close()
        }
      }),
      caseTimeout,
    )

    test(
      'a hung checkpoint does not starve renewal: the lease stays held',
      withHarness(async (open) => {
        const id = workId('hung-checkpoint')
        const gate = new Gate(await open())
        const a = new Leaser(leaserOptions(gate, 'suite-a', { checkpointTimeoutMs: Math.floor(ttlMs / 5) }))
        const other = await open()
        try {
          const lease = await a.acquire(id)
          gate.hangCheckpoints = true
          const checkpoint = lease.checkpoint(new TextEncoder().encode('stuck')).then(
            () => undefined,
            (error: unknown) => error,
          )
          await delay(ttlMs * 2)
          assert.equal(lease.held, true, `lost: ${String(lease.lossError)}`)
          await assert.rejects(other.acquire(id, 'suite-b', ttlMs), isLeaseHeldError)
          const error = await checkpoint
          assert.ok(
            error !== undefined && !isLeaseLostError(error),
            `checkpoint settled with ${String(error)}`,
          )
          assert.ok(gate.calls.checkpoint >= 2, 'the checkpoint was retried')
        } finally {
          await a.close()
        }
      }),
      caseTimeout,
    )

    test(
      'close releases every held lease at once',
      withHarness(async (open) => {
        const ids = [workId('close-1'), workId('close-2')]
        const a = new Leaser(leaserOptions(await open(), 'suite-a'))
        const other = await open()
        const leases = await Promise.all(ids.map((id) => a.acquire(id)))
        await a.close()
        for (const lease of leases) assert.equal(lease.held, false)
        for (const id of ids) {
          const record = await other.acquire(id, 'suite-b', ttlMs)
          assert.equal((await other.readCheckpoint(record)).cleanHandoff, true)
        }
      }),
      caseTimeout,
    )
  })
}
