import type { Backend } from '@worklease/spec'
import type { CheckpointCodec } from './checkpoint-codec.js'
import type { RetryPolicy } from './retry-policy.js'
import type { Timers } from './timers.js'

/** Options of {@link Leaser}. */
export interface LeaserOptions<S = Uint8Array> {
  /**
   * Where leases are stored: any worklease driver. Checked at construction: it must have
   * `capabilities` (an object) and `acquire`, `renew`, `checkpoint`, `release` and `readCheckpoint`;
   * an optional operation is used only where `capabilities` declares it and the method is there.
   *
   * ```ts
   * const leaser = new Leaser({ backend: new KyselyBackend({ db }), ttlMs: 30_000 })
   * ```
   */
  backend: Backend
  /**
   * How long a lease lasts without renewal. Also bounds how long a crashed holder blocks the work.
   *
   * ```ts
   * const leaser = new Leaser({ backend, ttlMs: 15_000 })
   * ```
   */
  ttlMs: number
  /**
   * Who this Leaser holds leases as. Must be unique per process and per Leaser (leases are not
   * reentrant). Default: `hostname-pid-random` ({@link defaultHolderId}).
   *
   * ```ts
   * const leaser = new Leaser({ backend, ttlMs: 30_000, holderId: `${podName}-worker` })
   * ```
   */
  holderId?: string
  /**
   * Time between renewals, measured from the start of the last successful renew or checkpoint;
   * each interval is shortened by up to `renewJitter` at random so holders spread their load.
   * Must be below `ttlMs - safetyMarginMs`. Default: `ttlMs / 3`.
   *
   * ```ts
   * const leaser = new Leaser({ backend, ttlMs: 30_000, renewIntervalMs: 5_000 })
   * ```
   */
  renewIntervalMs?: number
  /**
   * Fraction (0..1) by which each renew interval is randomly shortened. Default: 0.2.
   *
   * ```ts
   * const leaser = new Leaser({ backend, ttlMs: 30_000, renewJitter: 0 }) // exact intervals
   * ```
   */
  renewJitter?: number
  /**
   * How long before the backend's expiry the lease is declared lost locally: covers clock-rate drift
   * and, for client-clock backends, the clock skew between hosts. The local deadline is the start of
   * the last successful acquire, renew or checkpoint + `ttlMs - safetyMarginMs`. Default: `ttlMs / 10`.
   *
   * ```ts
   * const leaser = new Leaser({ backend, ttlMs: 30_000, safetyMarginMs: 5_000 })
   * ```
   */
  safetyMarginMs?: number
  /**
   * Per-attempt timeout of acquire, renew, release and readCheckpoint calls; an attempt that takes
   * longer is abandoned and counts as a transient error. Renew, release and readCheckpoint calls are
   * also told through their signal, which aborts up to a sixteenth of the timeout late: calls that
   * start within that time share one AbortSignal (a fresh one per call costs microseconds on
   * Node.js 20). A lease's end or `abandon()` stops the runner's wait, not the backend's call;
   * `close()` aborts every call still in flight. An acquire is not cancelled (only no longer awaited),
   * so if it lands later the lease it took is used when the acquire still wants it; otherwise it is
   * released at once after a clean handoff, and left to expire after a crash (so its successor still
   * learns of the crash). Checkpoints have their own {@link checkpointTimeoutMs}. Default: `renewIntervalMs`.
   *
   * ```ts
   * const leaser = new Leaser({ backend, ttlMs: 30_000, callTimeoutMs: 3_000 })
   * ```
   */
  callTimeoutMs?: number
  /**
   * Per-attempt timeout of checkpoint calls, which carry the state and may need longer than the
   * others. An attempt that takes longer is abandoned and retried with the same checkpoint sequence:
   * the store keeps the largest sequence it has seen for the lease, so an abandoned attempt that lands
   * late can never overwrite a later checkpoint. Renewals never wait for a checkpoint. Default:
   * `callTimeoutMs`.
   *
   * ```ts
   * const leaser = new Leaser({ backend, ttlMs: 30_000, checkpointTimeoutMs: 8_000 })
   * ```
   */
  checkpointTimeoutMs?: number
  /**
   * Backoff for transient store errors and for polling a held lease with `wait`. A waiter learns of a
   * release by polling: with this policy, but never sleeping past the current lease's expiry when the
   * backend reports it (`capabilities.reportsHolder`), so a crashed holder is taken over right at its
   * ttl (plus up to 25 ms of jitter) and a released lease within one poll interval. Each field is
   * checked like the other millisecond options, and one left out takes its default.
   *
   * ```ts
   * const leaser = new Leaser({ backend, ttlMs: 30_000, retry: { initialDelayMs: 200, maxDelayMs: 5_000 } })
   * ```
   */
  retry?: RetryPolicy
  /**
   * Monotonic clock, wall clock and timers. Default: `performance.now()`, `Date.now()` and unref'd
   * Node.js timers ({@link systemTimers}). Inject a
   * fake in tests (together with the backend's wall clock). `now`, `setTimeout` and `clearTimeout`
   * must be functions (`wallNow` too, if given); each is read once, at construction, and called on
   * the object it came from.
   *
   * ```ts
   * const leaser = new Leaser({ backend, ttlMs: 1_000, timers: fakeTime })
   * ```
   */
  timers?: Timers
  /**
   * Source of randomness in [0, 1) for jitter; an answer outside it (NaN too) counts as 0.5, and so
   * does a throw, whose error is rethrown on the next tick, as a throwing listener's is: the lease it
   * was drawn for is renewed on time all the same. Default: `Math.random`.
   *
   * ```ts
   * const leaser = new Leaser({ backend, ttlMs: 1_000, random: () => 0.5 })
   * ```
   */
  random?: () => number
  /**
   * How checkpoint state is turned into bytes and back, so `lease.checkpoint(value)` and
   * `lease.readCheckpoint()` speak your type; `readCheckpoint()` still returns the raw `bytes` too.
   * Default: bytes in, bytes out ({@link bytesCodec}). `encode` and `decode` are read once, at
   * construction, and called on the codec object.
   *
   * ```ts
   * const leaser = new Leaser({ backend, ttlMs: 30_000, codec: jsonCodec<{ page: number }>() })
   * await leaser.run('import-7', async (lease) => {
   *   const { state } = await lease.readCheckpoint() // { page: number } | null
   *   await lease.checkpoint({ page: (state?.page ?? 0) + 1 })
   * })
   * ```
   */
  codec?: CheckpointCodec<S>
  /**
   * Whether an acquire also brings back the checkpoint it starts from, where the backend can do that
   * in the same round trip (`capabilities.acquireWithCheckpoint`): the lease's first
   * `readCheckpoint()` is then answered without a round trip (the acquire's read, which no other
   * holder's write can follow while the lease is held), so a takeover that resumes costs one round trip,
   * not two. The bytes are kept until that read or the lease's first checkpoint. Set `false` when
   * leases never read their checkpoint and the states are large: each acquire would carry its state
   * for nothing. Default: `true`.
   *
   * ```ts
   * const leaser = new Leaser({ backend, ttlMs: 30_000, prefetchCheckpoint: false })
   * ```
   */
  prefetchCheckpoint?: boolean
}

/** Options of {@link Leaser.acquire}. */
export interface AcquireOptions {
  /**
   * While the lease is held by someone else, keep trying instead of throwing `LeaseHeldError` at
   * once: polling with the `retry` backoff, but never sleeping past the holder's expiry when the
   * backend reports it, so a crashed holder is taken over at its ttl. `true` or `false` (anything else
   * is `INVALID_ARGUMENT`). Default: false.
   *
   * ```ts
   * const lease = await leaser.acquire('nightly-report', { wait: true, timeoutMs: 60_000 })
   * ```
   */
  wait?: boolean
  /**
   * Gives up: rejects with `signal.reason`. Must be an `AbortSignal` (checked as a backend checks the
   * signal of its calls).
   *
   * ```ts
   * const lease = await leaser.acquire('job-7', { wait: true, signal: AbortSignal.timeout(10_000) })
   * ```
   */
  signal?: AbortSignal
  /**
   * Stops waiting after this many milliseconds: no attempt starts later, and the wait between two
   * attempts never runs past it. It bounds the waiting, not a round trip: the attempt in flight when
   * it passes is not cut short (each attempt is bounded by `callTimeoutMs`, so `acquire` settles within
   * `timeoutMs + callTimeoutMs`), which is why a timeout shorter than one round trip still acquires a
   * free lease instead of taking it and throwing it away. Then rejects with a `LeaseHeldError` if the
   * lease was still held, otherwise with the last store error.
   *
   * ```ts
   * const lease = await leaser.acquire('job-7', { wait: true, timeoutMs: 5_000 })
   * ```
   */
  timeoutMs?: number
}

/** Options of {@link Leaser.run}. */
export interface RunOptions extends AcquireOptions {
  /**
   * What to do with the lease when the callback throws: `'release'` it (the successor sees a clean
   * handoff) or let it `'expire'` (the successor sees `cleanHandoff: false` and can tell the previous
   * attempt failed). Default: `'release'`.
   *
   * ```ts
   * await leaser.run('job-7', work, { onError: 'expire' })
   * ```
   */
  onError?: 'release' | 'expire'
}

/** Options of {@link Leaser.close}. */
export interface CloseOptions {
  /**
   * How long `close` may take in all: waiting for `run` callbacks to settle, then for the releases.
   * Leases still not released by then are abandoned (they expire on their own, and the successor sees
   * `cleanHandoff: false`). Default: the ttl. One that is not a number in range rejects `close()`,
   * leaving the Leaser open.
   *
   * ```ts
   * process.on('SIGTERM', () => leaser.close({ timeoutMs: 5_000 }))
   * ```
   */
  timeoutMs?: number
}
