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
  MAX_ID_LENGTH,
  type RenewOutcome,
  type RevokeOptions,
  readClock,
  readOnce,
  systemClock,
  TokensExhaustedError,
  type ValidatedCallOptions,
  validateAcquireArgs,
  validateCheckpointArgs,
  validateListArgs,
  validateRecordArgs,
  validateRenewArgs,
  validateRenewManyArgs,
  validateRevokeArgs,
} from '@worklease/spec'
import type { LeaseCollection, LeaseDocumentLike } from './lease-collection.js'
import { prefixUpperBound } from './prefix-range.js'
import { renewManyUpdate } from './renew-many-update.js'

/** Options of {@link MongoBackend}. */
export interface MongoBackendOptions {
  /**
   * The collection holding one document per workId, usually made by `createLeaseCollection`. Give
   * every process its own `MongoClient`; the collection may be shared by many backends. Its default
   * collation must be the simple one (binary): `createLeaseCollection` refuses any other, which would
   * give workIds differing only in case or accents one lease.
   *
   * ```ts
   * const backend = new MongoBackend({ collection: client.db('app').collection('worklease_leases') })
   * ```
   */
  collection: LeaseCollection
  /**
   * The clock that decides expiry (MongoDB has no server-side "now" that a plain update can compare
   * with, short of pipeline updates). Default: `Date.now`. Keep hosts' clocks in sync (NTP) and ttls
   * well above the worst skew; release does not depend on it. A reading that is no time (NaN, an
   * infinity) fails the call with a `RangeError`, sending nothing.
   *
   * ```ts
   * const backend = new MongoBackend({ collection, clock: { now: () => Date.now() } })
   * ```
   */
  clock?: Clock
  /**
   * Largest checkpoint state in bytes: an integer from 0 to 16,775,516, the most a lease document
   * holds. That is MongoDB's 16 MiB (16,777,216-byte) document limit less 1,700 bytes for the lease's
   * other fields at their largest (a workId and a holderId of 255 UTF-16 code units, 3 UTF-8 bytes
   * each, and the tokens, expiry and checkpoint sequence). Anything else is `InvalidArgumentError`
   * here, rather than a checkpoint the server refuses later. Default: 16 MiB minus 16 KiB.
   *
   * ```ts
   * const backend = new MongoBackend({ collection, maxStateBytes: 1024 * 1024 })
   * ```
   */
  maxStateBytes?: number
  /**
   * Whether the server makes conditional writes from separate connections atomic with respect to each
   * other. Default: `true` (MongoDB). Set `false` for a wire-compatible server that is known not to,
   * such as FerretDB 1.x, whose findAndModify is a read then a write: the backend behaves the same,
   * but the testkit then skips its cross-connection race cases and prints `crossConnectionAtomicNote`.
   *
   * ```ts
   * const backend = new MongoBackend({
   *   collection,
   *   crossConnectionAtomic: false,
   *   crossConnectionAtomicNote: 'FerretDB 1.x implements findAndModify as a read then a write',
   * })
   * ```
   */
  crossConnectionAtomic?: boolean
  /**
   * Why `crossConnectionAtomic` is `false`; reported next to every race case the testkit skips.
   *
   * ```ts
   * const backend = new MongoBackend({ collection, crossConnectionAtomic: false, crossConnectionAtomicNote: 'no' })
   * ```
   */
  crossConnectionAtomicNote?: string
  /**
   * Whether acquire asks the server to return only the token (findAndModify's `fields`). Default:
   * `true`. Set `false` for servers that do not implement it (FerretDB 1.x answers `NotImplemented`);
   * acquire then receives the whole document, checkpointed state included, and ignores all but the
   * token.
   *
   * ```ts
   * const backend = new MongoBackend({ collection, findAndModifyProjection: false })
   * ```
   */
  findAndModifyProjection?: boolean
  /**
   * Whether `list` asks the server for each checkpoint's size (`$binarySize` in the find projection,
   * MongoDB 4.4+) instead of the checkpoint itself. Default: `true`. Set `false` for servers that do
   * not implement it (FerretDB 1.x answers `NotImplemented`): `list` then receives every listed
   * lease's checkpointed state and measures it here, so a page costs as many bytes as its checkpoints.
   *
   * ```ts
   * const backend = new MongoBackend({ collection, binarySizeProjection: false })
   * ```
   */
  binarySizeProjection?: boolean
}

/** MongoDB's limit on a stored document (`maxBsonObjectSize`). */
const MAX_DOCUMENT_BYTES = 16 * 1024 * 1024
// A BSON element is a type byte, the field name and its NUL, then the value; a string value is its
// length (int32), its UTF-8 bytes and a NUL; a binary value is its length, a subtype byte and the bytes.
const elementBytes = (name: string, valueBytes: number) => 1 + name.length + 1 + valueBytes
const stringBytes = (utf8Bytes: number) => 4 + utf8Bytes + 1
/** A workId or holderId at its longest: every UTF-16 code unit a 3-byte UTF-8 character. */
const LONGEST_ID_BYTES = 3 * MAX_ID_LENGTH
/** Every field of the largest lease document but the state's bytes (see the README's layout). */
const LEASE_DOCUMENT_BYTES_WITHOUT_STATE =
  4 + // the document's length
  elementBytes('_id', stringBytes(LONGEST_ID_BYTES)) +
  elementBytes('holderId', stringBytes(LONGEST_ID_BYTES)) +
  elementBytes('fencingToken', 8) +
  elementBytes('releasedToken', 8) +
  elementBytes('checkpointToken', 8) +
  // A double (8 bytes) above 2^31 - 1, as the default sequences are; an int32 below.
  elementBytes('checkpointSequence', 8) +
  elementBytes('expiresAt', 8) +
  elementBytes('released', 1) +
  elementBytes('state', 4 + 1) +
  1 // the document's terminating NUL
/** The most state a lease document holds: 16,775,516 bytes. */
const MAX_STATE_BYTES = MAX_DOCUMENT_BYTES - LEASE_DOCUMENT_BYTES_WITHOUT_STATE
/** 16 KiB under the document limit, well within {@link MAX_STATE_BYTES}. */
const DEFAULT_MAX_STATE_BYTES = MAX_DOCUMENT_BYTES - 16 * 1024
/** The most records one renewMany takes: one `update` command of 1,000 statements, far below 16 MiB. */
const RENEW_MANY_MAX_RECORDS = 1_000

/** The server's answer to an operator it does not implement (FerretDB's `$binarySize`). */
const NOT_IMPLEMENTED = 238

// No valid holderId is empty, so once revoke writes it no record matches the lease again.
const REVOKED_HOLDER = ''

/** The server's duplicate-key error: our conditional upsert lost to an existing document. */
const DUPLICATE_KEY = 11000
const INTERNAL_ERROR = 1

// Asks the driver for int64 as bigint and binary as bytes, so tokens never pass through a number.
// Every deserializing option is pinned, on every operation, whatever the client, Db or Collection
// was given: `promoteLongs: false` or `promoteValues: false` inherited next to `useBigInt64` make
// js-bson throw on the reply after the write landed, `promoteValues: false` alone hands back the
// write counts as Int32 objects (never `=== 1`), and `raw: true` hands back bytes, not a document.
const READ_BSON = {
  raw: false,
  useBigInt64: true,
  promoteLongs: true,
  promoteValues: true,
  promoteBuffers: true,
} as const

/**
 * A worklease backend over a MongoDB collection: one document per workId (`_id` = workId), one
 * command per operation, each a conditional write whose filter carries the fencing token.
 *
 * Document layout (see the README): `fencingToken` int64, `holderId` string, `expiresAt` date,
 * `released` bool, `releasedToken` int64 (the token of the last lease that ended by release, so the
 * current lease's cleanHandoff is `releasedToken == fencingToken - 1`), `state` binary.
 *
 * ```ts
 * import { MongoClient } from 'mongodb'
 * import { MongoBackend, createLeaseCollection } from '@worklease/mongodb'
 *
 * const client = new MongoClient(process.env.MONGODB_URL!)
 * const { collection } = await createLeaseCollection(client.db('app'))
 * const backend = new MongoBackend({ collection })
 * const record = await backend.acquire('job-7', 'worker-a', 30_000)
 * ```
 */
export class MongoBackend implements Backend {
  readonly capabilities: BackendCapabilities
  readonly #collection: LeaseCollection
  readonly #clock: Clock
  readonly #acquireProjection: { projection?: LeaseDocumentLike }
  readonly #acquireWithCheckpointProjection: { projection?: LeaseDocumentLike }
  readonly #binarySizeProjection: boolean

  constructor(options: MongoBackendOptions) {
    const {
      collection,
      clock = systemClock,
      maxStateBytes = DEFAULT_MAX_STATE_BYTES,
      crossConnectionAtomic = true,
      crossConnectionAtomicNote,
      binarySizeProjection = true,
      findAndModifyProjection: projects = true,
    } = readBackendOptions(options)
    if (
      typeof collection !== 'object' ||
      collection === null ||
      typeof collection.findOneAndUpdate !== 'function'
    ) {
      throw new InvalidArgumentError('collection must be a MongoDB Collection')
    }
    const checkedClock = checkClock(clock)
    for (const [name, value] of [
      ['crossConnectionAtomic', crossConnectionAtomic],
      ['binarySizeProjection', binarySizeProjection],
      ['findAndModifyProjection', projects],
    ] as const) {
      if (typeof value !== 'boolean') throw new InvalidArgumentError(`${name} must be a boolean`)
    }
    if (crossConnectionAtomicNote !== undefined && typeof crossConnectionAtomicNote !== 'string') {
      throw new InvalidArgumentError('crossConnectionAtomicNote must be a string')
    }
    this.#collection = collection
    this.#binarySizeProjection = binarySizeProjection
    this.#acquireProjection = projects ? { projection: { fencingToken: 1 } } : {}
    this.#acquireWithCheckpointProjection = projects
      ? { projection: { fencingToken: 1, releasedToken: 1, state: 1 } }
      : {}
    this.#clock = checkedClock
    if (!Number.isSafeInteger(maxStateBytes) || maxStateBytes < 0 || maxStateBytes > MAX_STATE_BYTES) {
      throw new InvalidArgumentError(
        `maxStateBytes must be an integer in 0..${MAX_STATE_BYTES} (what a MongoDB document holds ` +
          `besides the lease's other fields), got ${
            typeof maxStateBytes === 'number' ? maxStateBytes : typeof maxStateBytes
          }`,
      )
    }
    this.capabilities = Object.freeze({
      clock: 'client',
      maxStateBytes,
      crossConnectionAtomic,
      reportsHolder: true,
      acquireWithCheckpoint: true,
      list: true,
      revoke: true,
      ...(typeof collection.updateMany === 'function'
        ? { renewMany: Object.freeze({ maxRecords: RENEW_MANY_MAX_RECORDS }) }
        : {}),
      ...(crossConnectionAtomicNote === undefined ? {} : { crossConnectionAtomicNote }),
    })
  }

  async acquire(
    workId: string,
    holderId: string,
    ttlMs: number,
    options?: CallOptions,
  ): Promise<LeaseRecord> {
    // Only the validated snapshot from here on: the caller's arguments are never read again.
    const args = validateAcquireArgs(workId, holderId, ttlMs, options)
    return (await this.#take(args, this.#acquireProjection)).record
  }

  /** {@link acquire}, with the state and handoff from the document the same findAndModify returns. */
  async acquireWithCheckpoint(
    workId: string,
    holderId: string,
    ttlMs: number,
    options?: CallOptions,
  ): Promise<AcquiredWithCheckpoint> {
    const args = validateAcquireArgs(workId, holderId, ttlMs, options)
    const { record, document } = await this.#take(args, this.#acquireWithCheckpointProjection)
    return { record, checkpoint: checkpointOf(document, record.fencingToken) }
  }

  async #take(
    args: AcquireArgs,
    projection: { projection?: LeaseDocumentLike },
  ): Promise<{ record: LeaseRecord; document: LeaseDocumentLike }> {
    const now = readClock(this.#clock)
    const expiresAtMs = now + args.ttlMs
    let document: LeaseDocumentLike | null
    try {
      document = await this.#collection.findOneAndUpdate(
        // Matches only a free lease. When it matches nothing the upsert tries to insert `_id`, which
        // fails with E11000 if the document exists (held), also when another acquire inserted it
        // first: the loser of any race gets the duplicate key, never a second lease. A free lease
        // whose token is already the largest one fails the same way, and the failure path tells
        // the two apart: the store, not this process, refuses to go past the ceiling.
        {
          _id: args.workId,
          fencingToken: { $lt: MAX_FENCING_TOKEN },
          $or: [{ expiresAt: { $lte: new Date(now) } }, { released: true }],
        },
        {
          // $inc of a missing field starts from 0, so a new workId gets token 1 without a read.
          $inc: { fencingToken: 1n },
          $set: { holderId: args.holderId, expiresAt: new Date(expiresAtMs), released: false },
          // No lease was released before the first one: releasedToken 0 = token 1 - 1, a clean handoff.
          $setOnInsert: { releasedToken: 0n },
        },
        {
          upsert: true,
          returnDocument: 'after',
          ...projection,
          includeResultMetadata: false,
          ...writeOptions(args),
        },
      )
    } catch (error) {
      if (isDuplicateKeyOnId(error) || isPrimaryKeyViolation(error)) {
        throw await this.#whyNotFree(args, now, error)
      }
      throw error
    }
    if (!document) throw new Error('findOneAndUpdate with upsert returned no document')
    const record = createLeaseRecord(args.workId, args.holderId, toToken(document.fencingToken), expiresAtMs)
    return { record, document }
  }

  /**
   * Names an acquire's duplicate key: a held lease (with its holder), or a free one at the token
   * ceiling. E11000 carries no document, so this one read happens on this failure path only. The
   * lease is judged at `refusedAt`, the "now" the refused write compared with: one that expired or
   * was released in between is still the lease that refused it, reported as expiring in 0 ms, so a
   * waiter tries again at once instead of backing off blindly.
   */
  async #whyNotFree(args: AcquireArgs, refusedAt: number, cause: unknown): Promise<unknown> {
    const document = await this.#collection.findOne(
      { _id: args.workId },
      {
        projection: { fencingToken: 1, holderId: 1, expiresAt: 1, released: 1 },
        ...readOptions(args),
      },
    )
    // A duplicate key when no lease document exists (lease documents are never deleted) was on
    // another unique index: servers that omit keyPattern (FerretDB 1.x) leave no other way to tell.
    if (document === null) return cause
    let fencingToken: bigint
    try {
      fencingToken = toToken(document.fencingToken)
    } catch (error) {
      // A document no lease can be made of is a store failure, whatever the duplicate key meant.
      throw new TypeError((error as Error).message, { cause })
    }
    let expiresAtMs: number
    try {
      expiresAtMs = expiresAtOf(document).getTime()
    } catch (error) {
      throw new TypeError((error as Error).message, { cause })
    }
    const heldThen = document.released === false && expiresAtMs > refusedAt
    if (!heldThen && fencingToken >= MAX_FENCING_TOKEN) return new TokensExhaustedError(undefined, { cause })
    // A held lease with no holder to name is a broken document (reportsHolder is declared), not a lease.
    if (typeof document.holderId !== 'string') {
      throw new TypeError('expected a string holderId in the lease document', { cause })
    }
    const { holderId } = document
    return leaseHeldBy(
      { holderId, fencingToken, expiresAtMs, expiresInMs: expiresAtMs - readClock(this.#clock) },
      cause,
    )
  }

  async checkpoint(
    record: LeaseRecord,
    state: Uint8Array,
    ttlMs: number,
    options?: CheckpointOptions,
  ): Promise<void> {
    const args = validateCheckpointArgs(record, state, ttlMs, this.capabilities.maxStateBytes, options)
    const { fencingToken } = args.record
    // $max, not $set: a checkpoint that lands late, or has a shorter ttl, never shortens the lease.
    const extend = { $max: { expiresAt: new Date(readClock(this.#clock) + args.ttlMs) } }
    const stored = await this.#collection.updateOne(
      {
        ...validFilter(args.record),
        // The sequence belongs to the token that stored it, so a new lease needs no reset in acquire
        // (and a document written by an older version of this driver has none): any other token, or
        // none, means this lease has stored no checkpoint yet.
        $or: [{ checkpointToken: { $ne: fencingToken } }, { checkpointSequence: { $lt: args.sequence } }],
      },
      {
        // args.state is the validator's private copy, so the caller reusing its buffer before the
        // driver serializes (a busy pool sends later) cannot change what is stored.
        $set: { state: args.state, checkpointToken: fencingToken, checkpointSequence: args.sequence },
        ...extend,
      },
      writeOptions(args),
    )
    if (stored.matchedCount === 1) return
    // Superseded by a later checkpoint (or a retry of one that landed): its state stays, but the
    // holder is alive now, so the expiry still moves forward. Or the record is no longer valid.
    const extended = await this.#collection.updateOne(validFilter(args.record), extend, writeOptions(args))
    if (extended.matchedCount === 0) throw new FencedError()
  }

  async renew(record: LeaseRecord, ttlMs: number, options?: CallOptions): Promise<void> {
    const args = validateRenewArgs(record, ttlMs, options)
    const now = readClock(this.#clock)
    const result = await this.#collection.updateOne(
      { ...validFilter(args.record), expiresAt: { $gt: new Date(now) } },
      // $max: a late-landing or shorter renew never moves a live lease's expiry back.
      { $max: { expiresAt: new Date(now + args.ttlMs) } },
      writeOptions(args),
    )
    if (result.matchedCount === 1) return
    // Only to name the failure; nothing is written on this path.
    const stillValid = await this.#collection.findOne(validFilter(args.record), {
      projection: { _id: 1, expiresAt: 1 },
      ...readOptions(args),
    })
    if (stillValid === null) throw new FencedError()
    // An expiry the filter could not compare with a date is a broken document, not an expired lease.
    expiresAtOf(stillValid)
    throw new LeaseExpiredError()
  }

  /**
   * One `update` command (see {@link renewManyUpdate}). The reply counts matches without saying
   * which, so when it matched fewer than all, one `find` of the batch's still-valid documents names
   * each outcome: valid with at least the expiry the write set is renewed, valid with less expired,
   * anything else fenced.
   */
  async renewMany(
    records: readonly LeaseRecord[],
    ttlMs: number,
    options?: CallOptions,
  ): Promise<RenewOutcome[]> {
    const args = validateRenewManyArgs(records, ttlMs, RENEW_MANY_MAX_RECORDS, options)
    if (args.holderId === undefined) return []
    const now = readClock(this.#clock)
    const result = await renewManyUpdate(this.#collection, {
      records: args.records,
      holderId: args.holderId,
      now,
      ttlMs: args.ttlMs,
      options: writeOptions(args),
    })
    if (result.matchedCount === args.records.length) return args.records.map(() => 'renewed')
    // Only to name the outcomes; nothing is written on this path.
    const valid = await this.#collection
      .find(
        {
          _id: { $in: args.records.map((record) => record.workId) },
          holderId: args.holderId,
          released: false,
        },
        {
          projection: { _id: 1, fencingToken: 1, expiresAt: 1 },
          // Every record's document in the find's first batch (a cursor's default is 101), and one
          // to spare: a batch exactly full may leave the cursor open, and toArray would send a getMore
          // to find it empty. The limit closes it once every record's document is in.
          limit: args.records.length,
          batchSize: args.records.length + 1,
          // Tokens as bigints (READ_BSON, in readOptions): js-bson would hand back an int64 up to 2^53
          // as a number, and 2^53 is none.
          ...readOptions(args),
        },
      )
      .toArray()
    const byId = new Map(valid.map((document) => [document._id, document]))
    // Judged against what the write set (its `$max`), not at a second clock reading: a clock stepped
    // back between the two made a lease the write found expired, and left alone, read as renewed.
    const renewedUntil = new Date(now + args.ttlMs).getTime()
    return args.records.map((record): RenewOutcome => {
      const document = byId.get(record.workId)
      if (!document || toToken(document.fencingToken) !== record.fencingToken) return 'fenced'
      // One document no expiry can be read from costs its own lease only (renew alone throws for it):
      // thrown, it would fail the batch, whose other renewals landed, and their leases with it.
      const expiresAt = document.expiresAt
      return expiresAt instanceof Date && expiresAt.getTime() >= renewedUntil ? 'renewed' : 'expired'
    })
  }

  async release(record: LeaseRecord, options?: CallOptions): Promise<void> {
    const args = validateRecordArgs(record, options)
    const now = readClock(this.#clock)
    const result = await this.#collection.updateOne(
      validFilter(args.record),
      {
        // `released` frees the lease for any clock; `releasedToken` tells the successor the handoff
        // was clean; the expiry moves into the past too, for readers that only look at it.
        $set: { released: true, releasedToken: args.record.fencingToken },
        $min: { expiresAt: new Date(now - 1) },
      },
      writeOptions(args),
    )
    if (result.matchedCount === 0) throw new FencedError()
  }

  /**
   * One `find` a page: `_id` in `[prefix, successor of prefix)` and after the cursor, sorted by `_id`,
   * so the server walks the `_id` index in its binary (UTF-8, code point) order with no pattern to
   * escape. It asks for one lease more than `limit` to know whether a next page exists. Needs the
   * collection's default (simple) collation, which `createLeaseCollection` gives it.
   */
  async list(options?: ListOptions): Promise<LeasePage> {
    const args = validateListArgs(options)
    const upper = prefixUpperBound(args.prefix)
    const range: LeaseDocumentLike = {
      // `$gte: ''` for the empty prefix still keeps the range to strings, which every workId is.
      $gte: args.prefix,
      ...(args.cursor === undefined ? {} : { $gt: args.cursor }),
      ...(upper === undefined ? {} : { $lt: upper }),
    }
    const now = readClock(this.#clock)
    let documents: LeaseDocumentLike[]
    try {
      documents = await this.#collection
        .find(
          { _id: range },
          {
            projection: {
              fencingToken: 1,
              holderId: 1,
              expiresAt: 1,
              released: 1,
              // $binarySize of a missing state is null: a lease that never checkpointed.
              ...(this.#binarySizeProjection ? { stateBytes: { $binarySize: '$state' } } : { state: 1 }),
            },
            sort: { _id: 1 },
            limit: args.limit + 1,
            // The whole page in the find's first batch: no getMore, no cursor left open.
            batchSize: args.limit + 1,
            ...readOptions(args),
          },
        )
        .toArray()
    } catch (error) {
      if (this.#binarySizeProjection && (error as { code?: unknown } | null)?.code === NOT_IMPLEMENTED) {
        throw new TypeError(
          'the server does not implement $binarySize in a find projection; ' +
            'create the MongoBackend with binarySizeProjection: false',
          { cause: error },
        )
      }
      throw error
    }
    const page = documents.slice(0, args.limit)
    const leases = page.map((document) => toListing(document, now, this.#binarySizeProjection))
    return {
      leases,
      now: new Date(now),
      ...(documents.length > args.limit ? { cursor: leases.at(-1)!.workId } : {}),
    }
  }

  /**
   * One `update`: a live lease (not released, not revoked, not expired on this backend's clock) gets holderId `''`
   * and an expiry of now − 1. Every operation of the old record filters on its holderId, so they all
   * answer FENCED; the next acquire finds the lease expired, increments the token and, since
   * `releasedToken` is left alone, reports an unclean handoff. The state stays. With
   * `options.fencingToken` the filter also names the token, so only that tenure can match.
   */
  async revoke(workId: string, options?: RevokeOptions): Promise<boolean> {
    const args = validateRevokeArgs(workId, options)
    const now = readClock(this.#clock)
    // Not one revoked before: its now - 1 may still be ahead of this process's clock, but it is no one's.
    const filter: LeaseDocumentLike = {
      _id: args.workId,
      released: false,
      expiresAt: { $gt: new Date(now) },
      holderId: { $ne: REVOKED_HOLDER },
    }
    if (args.fencingToken !== undefined) filter.fencingToken = args.fencingToken
    const result = await this.#collection.updateOne(
      filter,
      { $set: { holderId: REVOKED_HOLDER, expiresAt: new Date(now - 1) } },
      writeOptions(args),
    )
    return result.matchedCount === 1
  }

  async readCheckpoint(record: LeaseRecord, options?: CallOptions): Promise<CheckpointRead> {
    const args = validateRecordArgs(record, options)
    const document = await this.#collection.findOne(validFilter(args.record), {
      projection: { state: 1, releasedToken: 1 },
      ...readOptions(args),
    })
    if (!document) throw new FencedError()
    return checkpointOf(document, args.record.fencingToken)
  }
}

/** The record is valid: same token and holder, not released. Tokens are per workId, hence `_id`. */
function validFilter(record: LeaseRecord): LeaseDocumentLike {
  return { _id: record.workId, fencingToken: record.fencingToken, holderId: record.holderId, released: false }
}

// Pinned on every operation, whatever the client's defaults: a client configured to read from
// secondaries (or with a weaker read concern) would see a lease a moment old as missing and answer
// FENCED to its holder, and an acknowledged w:1 acquire rolled back by a failover would hand its token
// out a second time. Majority-acknowledged writes cannot be rolled back, and a primary read after one
// sees it.
const WRITE = { writeConcern: { w: 'majority' }, ...READ_BSON } as const
const READ = { readPreference: 'primary', readConcern: { level: 'local' }, ...READ_BSON } as const

function writeOptions(args: ValidatedCallOptions): LeaseDocumentLike {
  return args.signal ? { ...WRITE, signal: args.signal } : { ...WRITE }
}

function readOptions(args: ValidatedCallOptions): LeaseDocumentLike {
  return args.signal ? { ...READ, signal: args.signal } : { ...READ }
}

function isDuplicateKeyOnId(error: unknown): boolean {
  if (typeof error !== 'object' || error === null) return false
  const { code, keyPattern } = error as { code?: unknown; keyPattern?: unknown }
  if (code !== DUPLICATE_KEY) return false
  // A duplicate on some other unique index a user added is a store failure, not a held lease.
  if (typeof keyPattern === 'object' && keyPattern !== null && !('_id' in keyPattern)) return false
  return true
}

/**
 * FerretDB 2's losing upsert: code 1 (InternalError) with PostgreSQL's unique-violation text, naming
 * the collection's primary key (`collection_pk_<n>`, which is `_id`). A unique index of the caller's
 * own is named otherwise (`documents_rum_index_<n>`, an exclusion constraint), so it stays the store
 * error it is.
 */
function isPrimaryKeyViolation(error: unknown): boolean {
  if (typeof error !== 'object' || error === null) return false
  const { code, message } = error as { code?: unknown; message?: unknown }
  return (
    code === INTERNAL_ERROR &&
    typeof message === 'string' &&
    /duplicate key value violates unique constraint "collection_pk_\d+"/.test(message)
  )
}

/** Reads an int64 exactly, whatever shape the driver or server handed it back in. */
function toToken(value: unknown, missing?: bigint): bigint {
  if (typeof value === 'bigint') return value
  // int32 (a server may narrow small values) or a Long when useBigInt64 was ignored.
  if (typeof value === 'number' && Number.isSafeInteger(value)) return BigInt(value)
  if (typeof value === 'object' && value !== null && typeof (value as LongLike).toBigInt === 'function') {
    return (value as LongLike).toBigInt()
  }
  if (value === undefined && missing !== undefined) return missing
  throw new TypeError(`expected a 64-bit integer in the lease document, got ${String(value)}`)
}

/** A lease document's expiry; one that is no date is a store failure, never a lease outcome. */
function expiresAtOf(document: { readonly _id?: unknown; readonly expiresAt?: unknown }): Date {
  const { expiresAt } = document
  if (!(expiresAt instanceof Date))
    throw new TypeError(`lease document ${String(document._id)} has no expiresAt date`)
  return expiresAt
}

/** A listed document as the contract shows it; a document no lease can be made of is a store failure. */
function toListing(document: LeaseDocumentLike, now: number, sizedByServer: boolean): LeaseListing {
  const { _id: workId, holderId, released } = document
  if (typeof workId !== 'string' || typeof holderId !== 'string' || typeof released !== 'boolean') {
    throw new TypeError(`malformed lease document ${String(workId)}`)
  }
  const expiresAt = expiresAtOf(document)
  return Object.freeze({
    workId,
    holderId,
    fencingToken: toToken(document.fencingToken),
    expiresAt,
    released,
    free: released || expiresAt.getTime() <= now,
    checkpointBytes: sizedByServer ? toSize(document.stateBytes) : stateSize(document.state),
  })
}

function toSize(value: unknown): number | null {
  if (value === null || value === undefined) return null
  if (typeof value === 'number' && Number.isSafeInteger(value)) return value
  throw new TypeError(`expected $binarySize to be an integer, got ${String(value)}`)
}

/** The size of stored state without copying it. */
function stateSize(value: unknown): number | null {
  if (value === undefined || value === null) return null
  if (value instanceof Uint8Array) return value.byteLength
  if (isBinary(value)) return value.position
  throw new TypeError('expected binary state in the lease document')
}

/**
 * A BSON Binary (one promoteBuffers did not unwrap: a non-zero subtype), told by its BSON type tag as
 * well as its shape: a sub-document stored as `{ buffer: BinData, position: 2 }` has the shape too.
 * Not `instanceof`: the user's driver may bring its own copy of the bson package.
 */
function isBinary(value: unknown): value is BinaryLike {
  const binary = value as BinaryLike
  return (
    typeof value === 'object' &&
    value !== null &&
    binary._bsontype === 'Binary' &&
    binary.buffer instanceof Uint8Array &&
    typeof binary.position === 'number'
  )
}

interface LongLike {
  toBigInt(): bigint
}

interface BinaryLike {
  readonly _bsontype: 'Binary'
  readonly buffer: Uint8Array
  readonly position: number
}

/** The checkpoint of the lease with `token`: a clean handoff when the lease before it was released. */
function checkpointOf(document: LeaseDocumentLike, token: bigint): CheckpointRead {
  return {
    state: toState(document.state),
    cleanHandoff: toToken(document.releasedToken, 0n) === token - 1n,
  }
}

/** Copies stored state into a plain Uint8Array the caller owns. */
function toState(value: unknown): Uint8Array | null {
  if (value === undefined || value === null) return null
  if (value instanceof Uint8Array) return new Uint8Array(value)
  // A Binary that promoteBuffers did not unwrap (non-zero subtype). Copied out: its buffer is a Node.js
  // Buffer, whose slice() would be a view of it rather than a plain Uint8Array of the caller's own.
  if (isBinary(value)) return new Uint8Array(value.buffer.subarray(0, value.position))
  throw new TypeError('expected binary state in the lease document')
}

/** The backend's options, each read once: a getter or Proxy cannot answer a check and the backend apart. */
function readBackendOptions(options: MongoBackendOptions): MongoBackendOptions {
  if (typeof options !== 'object' || options === null) throw new InvalidArgumentError('options are required')
  return readOnce(
    options,
    [
      'collection',
      'clock',
      'maxStateBytes',
      'crossConnectionAtomic',
      'crossConnectionAtomicNote',
      'binarySizeProjection',
      'findAndModifyProjection',
    ],
    'options',
  ) as MongoBackendOptions
}
