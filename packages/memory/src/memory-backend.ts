import {
  type AcquireArgs,
  type AcquiredWithCheckpoint,
  type Backend,
  type BackendCapabilities,
  type CallOptions,
  type CheckpointOptions,
  type CheckpointRead,
  type Clock,
  checkClock,
  compareWorkIds,
  createLeaseRecord,
  FencedError,
  InvalidArgumentError,
  LeaseExpiredError,
  type LeaseListing,
  type LeasePage,
  type LeaseRecord,
  type ListOptions,
  leaseHeldBy,
  MAX_FENCING_TOKEN,
  type RenewOutcome,
  type RevokeOptions,
  readClock,
  readOnce,
  systemClock,
  TokensExhaustedError,
  validateAcquireArgs,
  validateCheckpointArgs,
  validateListArgs,
  validateRecordArgs,
  validateRenewArgs,
  validateRenewManyArgs,
  validateRevokeArgs,
} from '@worklease/spec'
import { MemoryStore, type StoredLease } from './memory-store.js'

/** Options of {@link MemoryBackend}. */
export interface MemoryBackendOptions {
  /**
   * Storage shared with other backends, as processes share a database. Default: a new store.
   *
   * ```ts
   * const store = new MemoryStore()
   * const backend = new MemoryBackend({ store })
   * ```
   */
  store?: MemoryStore
  /**
   * The clock that decides expiry. Default: `Date.now`. A reading that is no time (NaN, an infinity)
   * fails the call with a `RangeError`, changing nothing.
   *
   * ```ts
   * let now = 0
   * const backend = new MemoryBackend({ clock: { now: () => now } })
   * ```
   */
  clock?: Clock
  /**
   * Largest checkpoint state in bytes. Default: 16 MiB.
   *
   * ```ts
   * const backend = new MemoryBackend({ maxStateBytes: 1024 })
   * ```
   */
  maxStateBytes?: number
}

const DEFAULT_MAX_STATE_BYTES = 16 * 1024 * 1024
// As many as the SQL drivers take, so tests with the memory backend chunk like production does.
const RENEW_MANY_MAX_RECORDS = 1_000
// No valid holderId is empty, so no record ever matches a revoked lease again.
const REVOKED_HOLDER = ''

/**
 * The reference backend: every rule of the contract in plain code, in process memory. Use it in your
 * own unit tests and for single-process work; it is also what the testkit's broken backends wrap.
 *
 * ```ts
 * const backend = new MemoryBackend()
 * const record = await backend.acquire('job-1', 'worker-a', 10_000)
 * ```
 */
export class MemoryBackend implements Backend {
  readonly capabilities: BackendCapabilities
  readonly store: MemoryStore
  readonly #leases: Map<string, StoredLease>
  readonly #clock: Clock

  constructor(options: MemoryBackendOptions = {}) {
    const {
      store = new MemoryStore(),
      clock = systemClock,
      maxStateBytes = DEFAULT_MAX_STATE_BYTES,
    } = readOptions(options)
    if (typeof store !== 'object' || store === null)
      throw new InvalidArgumentError('store must be a MemoryStore')
    // The map read once and kept: a getter answering another map later would split one store in two.
    const { leases } = readOnce(store, ['leases'], 'store')
    if (!(leases instanceof Map)) throw new InvalidArgumentError('store must be a MemoryStore')
    const checkedClock = checkClock(clock)
    if (typeof maxStateBytes !== 'number' || !Number.isSafeInteger(maxStateBytes) || maxStateBytes < 0) {
      throw new InvalidArgumentError(
        `maxStateBytes must be a non-negative integer, got ${typeof maxStateBytes === 'number' ? maxStateBytes : typeof maxStateBytes}`,
      )
    }
    this.store = store
    this.#leases = leases
    this.#clock = checkedClock
    this.capabilities = Object.freeze({
      clock: 'client',
      maxStateBytes,
      crossConnectionAtomic: true,
      reportsHolder: true,
      acquireWithCheckpoint: true,
      list: true,
      revoke: true,
      renewMany: Object.freeze({ maxRecords: RENEW_MANY_MAX_RECORDS }),
    })
  }

  async acquire(
    workId: string,
    holderId: string,
    ttlMs: number,
    options?: CallOptions,
  ): Promise<LeaseRecord> {
    const args = validateAcquireArgs(workId, holderId, ttlMs, options)
    const lease = this.#take(args)
    return createLeaseRecord(args.workId, args.holderId, lease.fencingToken, lease.expiresAtMs)
  }

  async acquireWithCheckpoint(
    workId: string,
    holderId: string,
    ttlMs: number,
    options?: CallOptions,
  ): Promise<AcquiredWithCheckpoint> {
    const args = validateAcquireArgs(workId, holderId, ttlMs, options)
    const lease = this.#take(args)
    return {
      record: createLeaseRecord(args.workId, args.holderId, lease.fencingToken, lease.expiresAtMs),
      checkpoint: { state: copyState(lease.state), cleanHandoff: lease.cleanHandoff },
    }
  }

  #take(args: AcquireArgs): StoredLease {
    // The clock first: a reading that is no time fails the call before the store is touched.
    const now = readClock(this.#clock)
    this.store.operations++
    const previous = this.#leases.get(args.workId)
    if (previous && !previous.released && previous.expiresAtMs > now) {
      // Through leaseHeldBy: a revoked lease whose "now - 1" is still ahead of this clock names nobody.
      throw leaseHeldBy({
        holderId: previous.holderId,
        fencingToken: previous.fencingToken,
        expiresAtMs: previous.expiresAtMs,
        expiresInMs: previous.expiresAtMs - now,
      })
    }
    if (previous && previous.fencingToken >= MAX_FENCING_TOKEN) throw new TokensExhaustedError()
    const next: StoredLease = {
      fencingToken: (previous?.fencingToken ?? 0n) + 1n,
      holderId: args.holderId,
      expiresAtMs: now + args.ttlMs,
      released: false,
      cleanHandoff: previous ? previous.released : true,
      state: previous?.state ?? null,
      checkpointSequence: 0,
    }
    this.#leases.set(args.workId, next)
    return next
  }

  async checkpoint(
    record: LeaseRecord,
    state: Uint8Array,
    ttlMs: number,
    options?: CheckpointOptions,
  ): Promise<void> {
    const args = validateCheckpointArgs(record, state, ttlMs, this.capabilities.maxStateBytes, options, {
      kept: true,
    })
    const now = readClock(this.#clock)
    this.store.operations++
    const lease = this.#valid(args.record)
    if (args.sequence > lease.checkpointSequence) {
      // validateCheckpointArgs already copied the bytes, into a buffer of their own (kept: true), so
      // the caller cannot change them now and they keep no shared slab alive.
      lease.state = args.state
      lease.checkpointSequence = args.sequence
    }
    lease.expiresAtMs = Math.max(lease.expiresAtMs, now + args.ttlMs)
  }

  async renew(record: LeaseRecord, ttlMs: number, options?: CallOptions): Promise<void> {
    const args = validateRenewArgs(record, ttlMs, options)
    const now = readClock(this.#clock)
    this.store.operations++
    const lease = this.#valid(args.record)
    if (lease.expiresAtMs <= now) throw new LeaseExpiredError()
    lease.expiresAtMs = Math.max(lease.expiresAtMs, now + args.ttlMs)
  }

  async renewMany(
    records: readonly LeaseRecord[],
    ttlMs: number,
    options?: CallOptions,
  ): Promise<RenewOutcome[]> {
    const args = validateRenewManyArgs(records, ttlMs, RENEW_MANY_MAX_RECORDS, options)
    if (args.records.length === 0) return []
    const now = readClock(this.#clock)
    this.store.operations++
    return args.records.map((record): RenewOutcome => {
      const lease = this.#leases.get(record.workId)
      if (
        !lease ||
        lease.released ||
        lease.fencingToken !== record.fencingToken ||
        lease.holderId !== record.holderId
      ) {
        return 'fenced'
      }
      if (lease.expiresAtMs <= now) return 'expired'
      lease.expiresAtMs = Math.max(lease.expiresAtMs, now + args.ttlMs)
      return 'renewed'
    })
  }

  async list(options?: ListOptions): Promise<LeasePage> {
    const { prefix, cursor, limit } = validateListArgs(options)
    const now = readClock(this.#clock)
    this.store.operations++
    const workIds = [...this.#leases.keys()]
      .filter(
        (workId) => workId.startsWith(prefix) && (cursor === undefined || compareWorkIds(workId, cursor) > 0),
      )
      .sort(compareWorkIds)
    const page = workIds.slice(0, limit)
    const leases = page.map((workId): LeaseListing => {
      const lease = this.#leases.get(workId)!
      return Object.freeze({
        workId,
        holderId: lease.holderId,
        fencingToken: lease.fencingToken,
        expiresAt: new Date(lease.expiresAtMs),
        released: lease.released,
        free: lease.released || lease.expiresAtMs <= now,
        checkpointBytes: lease.state?.byteLength ?? null,
      })
    })
    return { leases, now: new Date(now), ...(workIds.length > limit ? { cursor: page.at(-1)! } : {}) }
  }

  async revoke(workId: string, options?: RevokeOptions): Promise<boolean> {
    const args = validateRevokeArgs(workId, options)
    const now = readClock(this.#clock)
    this.store.operations++
    const lease = this.#leases.get(args.workId)
    // A revoked lease is no one's: its "now - 1" may still be ahead of this backend's clock.
    if (!lease || lease.released || lease.expiresAtMs <= now || lease.holderId === REVOKED_HOLDER) {
      return false
    }
    // Only the tenure the caller named, when it named one: a later holder's lease is not its to end.
    if (args.fencingToken !== undefined && lease.fencingToken !== args.fencingToken) return false
    lease.holderId = REVOKED_HOLDER
    lease.expiresAtMs = now - 1
    return true
  }

  async release(record: LeaseRecord, options?: CallOptions): Promise<void> {
    const args = validateRecordArgs(record, options)
    const now = readClock(this.#clock)
    this.store.operations++
    const lease = this.#valid(args.record)
    lease.released = true
    lease.expiresAtMs = Math.min(lease.expiresAtMs, now - 1)
  }

  async readCheckpoint(record: LeaseRecord, options?: CallOptions): Promise<CheckpointRead> {
    const args = validateRecordArgs(record, options)
    this.store.operations++
    const lease = this.#valid(args.record)
    return { state: copyState(lease.state), cleanHandoff: lease.cleanHandoff }
  }

  #valid(record: LeaseRecord): StoredLease {
    const lease = this.#leases.get(record.workId)
    if (
      !lease ||
      lease.released ||
      lease.fencingToken !== record.fencingToken ||
      lease.holderId !== record.holderId
    ) {
      throw new FencedError()
    }
    return lease
  }
}

// Each option read once, so a getter cannot pass a check with one value and be kept with another.
function readOptions(options: MemoryBackendOptions): MemoryBackendOptions {
  if (typeof options !== 'object' || options === null) {
    throw new InvalidArgumentError('options must be an object')
  }
  return readOnce(options, ['store', 'clock', 'maxStateBytes'], 'options') as MemoryBackendOptions
}

// A copy, so a caller that writes into the bytes it read cannot change the stored checkpoint.
function copyState(state: Uint8Array | null): Uint8Array | null {
  return state ? new Uint8Array(state) : null
}
