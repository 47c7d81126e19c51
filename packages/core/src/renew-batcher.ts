import {
  type Backend,
  FencedError,
  LeaseExpiredError,
  type LeaseRecord,
  type RenewOutcome,
  raceAbort,
} from '@worklease/spec'
import { type Abortable, linkedController } from './abortable.js'
import { type Instant, instant, type Timers } from './timers.js'

interface PendingRenewal {
  readonly record: LeaseRecord
  readonly signal: Abortable
  readonly resolve: (sentAt: Instant) => void
  readonly reject: (error: unknown) => void
}

/**
 * @internal Coalesces the renewals of one Leaser's leases: the first renewal that falls due opens a
 * window of `windowMs`, and every renewal due before it closes goes out with it, in one
 * `backend.renewMany` per chunk of `capabilities.renewMany.maxRecords`. Each lease hears only its own
 * outcome: `'renewed'` resolves, `'expired'` and `'fenced'` reject with the error `renew` would have
 * thrown, and a failure of the store rejects every lease of that chunk with it (a transient error
 * each lease retries on its own, as after a lost reply).
 *
 * A renewed lease's deadline moves from the moment its batch was sent, which is no later than the
 * moment the store judged it: the clock model of a single `renew`.
 */
export class RenewBatcher {
  readonly #renewMany: NonNullable<Backend['renewMany']>
  readonly #ttlMs: number
  readonly #timers: Timers
  readonly #windowMs: number
  readonly #callTimeoutMs: number
  readonly #maxRecords: number
  #pending: PendingRenewal[] = []
  #timer: unknown

  constructor(
    backend: Backend,
    options: { ttlMs: number; timers: Timers; windowMs: number; callTimeoutMs: number },
  ) {
    this.#renewMany = backend.renewMany!.bind(backend)
    this.#ttlMs = options.ttlMs
    this.#timers = options.timers
    this.#windowMs = options.windowMs
    this.#callTimeoutMs = options.callTimeoutMs
    this.#maxRecords = Math.max(1, Math.floor(backend.capabilities.renewMany?.maxRecords ?? 1))
  }

  /** Whether `backend` can renew in batches: it declares the capability and has the method. */
  static supports(backend: Backend): boolean {
    return backend.capabilities.renewMany !== undefined && typeof backend.renewMany === 'function'
  }

  /** How long a renewal may wait for its batch: the Leaser asks this much before the renewal is due. */
  get windowMs(): number {
    return this.#windowMs
  }

  /**
   * Renews `record` with the next batch and resolves with the moment that batch was sent, from which
   * the lease's deadline may move; `signal` abandons the wait (the batch goes on for the rest).
   */
  renew(record: LeaseRecord, signal: Abortable): Promise<Instant> {
    return new Promise<Instant>((resolve, reject) => {
      if (signal.aborted) return reject(signal.reason)
      this.#pending.push({ record, signal, resolve, reject })
      this.#timer ??= this.#timers.setTimeout(() => this.#flush(), this.#windowMs)
    })
  }

  #flush(): void {
    this.#timer = undefined
    // An abandoned renewal is not sent: its lease stopped waiting (ended, or timed out and retrying).
    let waiting = this.#pending.filter((entry) => !entry.signal.aborted)
    this.#pending = []
    while (waiting.length > 0) {
      // One workId at most once per call (the contract refuses repeats): a second one waits a chunk.
      const chunk: PendingRenewal[] = []
      const later: PendingRenewal[] = []
      const workIds = new Set<string>()
      for (const entry of waiting) {
        if (chunk.length < this.#maxRecords && !workIds.has(entry.record.workId)) {
          workIds.add(entry.record.workId)
          chunk.push(entry)
        } else {
          later.push(entry)
        }
      }
      void this.#send(chunk)
      waiting = later
    }
  }

  async #send(chunk: readonly PendingRenewal[]): Promise<void> {
    const { controller, dispose } = linkedController(this.#timers, [], this.#callTimeoutMs)
    const sentAt = instant(this.#timers)
    let outcomes: RenewOutcome[]
    try {
      // raceAbort: a driver that ignored the signal still frees its leases at the timeout.
      outcomes = await raceAbort(
        this.#renewMany(
          chunk.map((entry) => entry.record),
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
      for (const entry of chunk) entry.reject(error)
      return
    } finally {
      dispose()
    }
    for (const [i, entry] of chunk.entries()) {
      const outcome = outcomes[i]
      if (outcome === 'renewed') entry.resolve(sentAt)
      else if (outcome === 'expired') entry.reject(new LeaseExpiredError())
      else if (outcome === 'fenced') entry.reject(new FencedError())
      else entry.reject(new TypeError(`renewMany returned an unknown outcome: ${String(outcome)}`))
    }
  }
}
