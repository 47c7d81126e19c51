import type {
  AcquiredWithCheckpoint,
  Backend,
  BackendCapabilities,
  CallOptions,
  CheckpointRead,
  LeasePage,
  LeaseRecord,
  ListOptions,
  RenewOutcome,
} from '@worklease/spec'
import type { HistoryWriter, OpName } from './history.js'

const decoder = new TextDecoder()

/**
 * A backend that records every call it forwards, in the same history the register workers write, so
 * what `@worklease/core` sends (retries, renewals, abandoned calls, releases after a loss) is judged by
 * the same checker. No timeout of its own: the Leaser bounds and abandons its calls, and an abandoned
 * or failed call is recorded as indeterminate, since it may still land. `list` (what a LeasePool reads
 * to find its group) changes nothing and is forwarded unrecorded. Where the store has `renewMany`, so
 * does this backend (the Leaser then renews in batches): each record of a batch is recorded as a renew
 * of its own, with the outcome the batch gave it.
 */
export class RecordingBackend implements Backend {
  readonly capabilities: BackendCapabilities
  readonly #inner: Backend
  readonly #history: HistoryWriter
  readonly #offset: () => number

  readonly renewMany?: (
    records: readonly LeaseRecord[],
    ttlMs: number,
    options?: CallOptions,
  ) => Promise<RenewOutcome[]>

  constructor(inner: Backend, history: HistoryWriter, offset: () => number) {
    this.#inner = inner
    this.capabilities = inner.capabilities
    this.#history = history
    this.#offset = offset
    const renewMany = inner.renewMany
    if (typeof renewMany === 'function') {
      this.renewMany = (records, ttlMs, options) =>
        this.#renewMany(renewMany.bind(inner), records, ttlMs, options)
    }
  }

  acquire(workId: string, holderId: string, ttlMs: number, options?: CallOptions): Promise<LeaseRecord> {
    return this.#record(
      { holder: holderId, op: 'acquire', workId, ttl: ttlMs },
      () => this.#inner.acquire(workId, holderId, ttlMs, options),
      (record) => ({ token: record.fencingToken }),
    )
  }

  /** Recorded as an acquire that also read: the checker judges its state and handoff as a read's. */
  acquireWithCheckpoint(
    workId: string,
    holderId: string,
    ttlMs: number,
    options?: CallOptions,
  ): Promise<AcquiredWithCheckpoint> {
    const inner = this.#inner
    if (!inner.acquireWithCheckpoint) {
      return Promise.reject(new TypeError('the backend cannot acquireWithCheckpoint'))
    }
    return this.#record(
      { holder: holderId, op: 'acquire', workId, ttl: ttlMs },
      () => inner.acquireWithCheckpoint!(workId, holderId, ttlMs, options),
      ({ record, checkpoint }) => ({ token: record.fencingToken, ...describeRead(checkpoint) }),
    )
  }

  checkpoint(record: LeaseRecord, state: Uint8Array, ttlMs: number, options?: CallOptions): Promise<void> {
    // Decoded before the call: what is recorded is what was sent.
    const value = decoder.decode(state)
    return this.#record(on(record, 'checkpoint', { ttl: ttlMs, value }), () =>
      this.#inner.checkpoint(record, state, ttlMs, options),
    )
  }

  renew(record: LeaseRecord, ttlMs: number, options?: CallOptions): Promise<void> {
    return this.#record(on(record, 'renew', { ttl: ttlMs }), () => this.#inner.renew(record, ttlMs, options))
  }

  release(record: LeaseRecord, options?: CallOptions): Promise<void> {
    return this.#record(on(record, 'release'), () => this.#inner.release(record, options))
  }

  readCheckpoint(record: LeaseRecord, options?: CallOptions): Promise<CheckpointRead> {
    return this.#record(
      on(record, 'readCheckpoint'),
      () => this.#inner.readCheckpoint(record, options),
      describeRead,
    )
  }

  list(options?: ListOptions): Promise<LeasePage> {
    if (!this.#inner.list) return Promise.reject(new TypeError('the backend cannot list leases'))
    return this.#inner.list(options)
  }

  async #renewMany(
    renewMany: NonNullable<Backend['renewMany']>,
    records: readonly LeaseRecord[],
    ttlMs: number,
    options?: CallOptions,
  ): Promise<RenewOutcome[]> {
    const ids = records.map((record) =>
      this.#history.invoke(on(record, 'renew', { ttl: ttlMs }), this.#offset()),
    )
    let outcomes: RenewOutcome[]
    try {
      outcomes = await renewMany(records, ttlMs, options)
    } catch (error) {
      const offset = this.#offset()
      for (const id of ids) this.#history.threw(id, error, offset)
      throw error
    }
    const offset = this.#offset()
    ids.forEach((id, i) => {
      const outcome = Array.isArray(outcomes) ? outcomes[i] : undefined
      if (outcome === 'renewed') this.#history.complete(id, 'ok', offset)
      else if (outcome === 'fenced') this.#history.complete(id, 'fail', offset, { code: 'FENCED' })
      else if (outcome === 'expired') this.#history.complete(id, 'fail', offset, { code: 'LEASE_EXPIRED' })
      // An outcome the contract has no word for: the runner treats it as a failure, which may have landed.
      else this.#history.complete(id, 'info', offset, { code: `renewMany outcome ${String(outcome)}` })
    })
    return outcomes
  }

  async #record<T>(
    fields: { holder: string; op: OpName; workId: string; token?: bigint; ttl?: number; value?: string },
    run: () => Promise<T>,
    describe: (value: T) => { token?: bigint; read?: string | null; clean?: boolean } = () => ({}),
  ): Promise<T> {
    const id = this.#history.invoke(fields, this.#offset())
    try {
      const value = await run()
      this.#history.complete(id, 'ok', this.#offset(), describe(value))
      return value
    } catch (error) {
      this.#history.threw(id, error, this.#offset())
      throw error
    }
  }
}

const on = (record: LeaseRecord, op: OpName, extra: { ttl?: number; value?: string } = {}) => ({
  holder: record.holderId,
  op,
  workId: record.workId,
  token: record.fencingToken,
  ...extra,
})

/** A checkpoint read as the history records it: the state as text (null: none) and the handoff. */
export const describeRead = (read: CheckpointRead) => ({
  read: read.state ? decoder.decode(read.state) : null,
  clean: read.cleanHandoff,
})
