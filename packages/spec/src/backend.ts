import type { BackendCapabilities } from './backend-capabilities.js'
import type { CallOptions, CheckpointOptions } from './call-options.js'
import type { LeasePage, ListOptions } from './lease-listing.js'
import type { LeaseRecord } from './lease-record.js'
import type { RenewOutcome } from './renew-outcome.js'
import type { RevokeOptions } from './revoke-options.js'

/** What {@link Backend.readCheckpoint} returns. */
export interface CheckpointRead {
  /**
   * The last state any holder of this workId checkpointed, or `null` if none ever did (an empty state
   * is an empty array, through every handoff). A plain `Uint8Array` the caller owns: not a Node.js
   * `Buffer`, never a view into a larger or shared buffer (a pooled `Buffer`'s `.buffer` holds other
   * bytes, and is reused).
   */
  readonly state: Uint8Array | null
  /** `true` if the previous lease ended by `release` (or there was none); `false` after a crash. */
  readonly cleanHandoff: boolean
}

/** What {@link Backend.acquireWithCheckpoint} returns: the new lease and the checkpoint it starts from. */
export interface AcquiredWithCheckpoint {
  readonly record: LeaseRecord
  /** What `readCheckpoint(record)` would have read at the moment of the acquire. */
  readonly checkpoint: CheckpointRead
}

/**
 * A store of leases. Every method is a single attempt (no retries inside), a single round trip on
 * its happy path, and throws `InvalidArgumentError` for bad input before touching the store.
 * Retrying, renewing on a timer and signalling loss belong to the caller (`@worklease/core`).
 *
 * "now" is the backend's clock: the database server's for SQL backends, the process clock
 * (injectable) for client-clock backends; `capabilities.clock` says which.
 *
 * A record is *valid* while the stored token and holderId equal the record's and the lease was not
 * released. A lease is *free* when nothing is stored for its workId, or it expired (`expiresAt <= now`),
 * or it was released.
 *
 * Expiry only moves forward while a lease is held: renew and checkpoint set
 * `expiresAt = max(stored expiresAt, now + ttl)`, so a late-landing call, a shorter ttl or a
 * connection whose clock is behind can never shorten a live lease. Only release moves it back.
 *
 * Every method takes its arguments through spec's validators (`validateAcquireArgs`, ...), which read
 * each caller-supplied object once and return a frozen snapshot of primitives; a backend uses only the
 * snapshot, so an object whose getters answer differently on a second read cannot reach the store.
 *
 * ```ts
 * const record = await backend.acquire('job-7', 'worker-a', 30_000)
 * const { state, cleanHandoff } = await backend.readCheckpoint(record)
 * await backend.checkpoint(record, new TextEncoder().encode('step 3'), 30_000)
 * await backend.release(record)
 * ```
 */
export interface Backend {
  readonly capabilities: BackendCapabilities

  /**
   * Takes the lease if it is free: token = previous + 1 (1 for a new workId), expiry = now + ttl,
   * checkpointed state kept, cleanHandoff = "the previous lease ended by release". However long the
   * lease was free: a store that deletes a free lease's row (a TTL index, a cleanup job) restarts
   * its tokens at 1. (The testkit moves a client clock a year ahead; a server's own TTL it cannot.)
   * @throws `LeaseHeldError` if someone (including this same holderId) holds it; with
   * `capabilities.reportsHolder`, its `holder` says who and for how long, so a caller whose earlier
   * acquire had an unknown outcome recognises its own lease with this one extra round trip.
   * @throws `TokensExhaustedError` if the lease is free but its token is already `MAX_FENCING_TOKEN`
   * (2^63 - 1), checked by the store in the same write: never a record whose token no store can keep.
   */
  acquire(workId: string, holderId: string, ttlMs: number, options?: CallOptions): Promise<LeaseRecord>

  /**
   * Optional (`capabilities.acquireWithCheckpoint`): {@link acquire}, and in the same round trip what
   * {@link readCheckpoint} of the new record would read, for a holder that resumes from the last
   * checkpoint (most do): one round trip per takeover instead of two. It takes the lease exactly as
   * `acquire` does (same token, expiry, errors and failure-path reads), and the checkpoint is the
   * stored state and handoff of the row it wrote, so no write of another holder can fall between the
   * two. A lease it could not take transfers no state. Validation as `acquire` (`validateAcquireArgs`).
   * A driver that must read the state back in a second statement (MySQL 8, without `RETURNING`) may find
   * the lease already taken over when the ttl is shorter than that round trip: it then throws a store
   * error, as after a lost reply, where `acquire` would return the already-expired record.
   *
   * ```ts
   * const { record, checkpoint } = await backend.acquireWithCheckpoint!('job-7', 'worker-a', 30_000)
   * if (!checkpoint.cleanHandoff) console.log('the previous holder crashed; resuming from', checkpoint.state)
   * ```
   */
  acquireWithCheckpoint?(
    workId: string,
    holderId: string,
    ttlMs: number,
    options?: CallOptions,
  ): Promise<AcquiredWithCheckpoint>

  /**
   * Stores `state` and extends expiry to at least now + ttl (`max(stored, now + ttl)`), if the record
   * is valid, even if the lease expired but nobody took it over (the token proves no successor
   * started).
   *
   * Checkpoints of one lease are ordered by `options.sequence` (default: drawn when the call is made):
   * one whose sequence is not above the largest this lease has stored succeeds without storing its
   * state, so a checkpoint sent earlier never replaces one sent later, whatever the order they arrive
   * in and however often one is retried. It still extends the expiry like renew: a retry whose first
   * attempt landed unseen proves the holder alive now. Acquire starts every lease with no sequence
   * stored. A driver needs one conditional write on the happy path: store state, sequence and expiry
   * where the record is valid and `stored sequence < sequence`; on no match, one more conditional
   * write extends the expiry of a valid record (success) or finds it fenced.
   * @throws `FencedError` if the record is not valid; nothing changes then.
   */
  checkpoint(
    record: LeaseRecord,
    state: Uint8Array,
    ttlMs: number,
    options?: CheckpointOptions,
  ): Promise<void>

  /**
   * Extends expiry to at least now + ttl (`max(stored, now + ttl)`: never shorter than it was). The
   * token does not change, so a renew whose reply was lost can be retried.
   * @throws `LeaseExpiredError` if the record is valid but the lease expired.
   * @throws `FencedError` if the record is not valid.
   */
  renew(record: LeaseRecord, ttlMs: number, options?: CallOptions): Promise<void>

  /**
   * Ends the lease cleanly: the next acquire succeeds at once (even on a clock behind ours) and sees
   * `cleanHandoff: true`. The only call that moves the expiry backward: to before now (never later than
   * it was), so a listing shows the lease ended, not running until its old expiry.
   * @throws `FencedError` if the record is not valid (taken over, or already released).
   */
  release(record: LeaseRecord, options?: CallOptions): Promise<void>

  /**
   * Reads the last checkpointed state of the workId and how the previous lease ended.
   * @throws `FencedError` if the record is not valid (an expired one that nobody took is fine).
   */
  readCheckpoint(record: LeaseRecord, options?: CallOptions): Promise<CheckpointRead>

  /**
   * Optional (`capabilities.list`): one page of the stored leases, by workId prefix, for operators and
   * for pools that discover their members. Reading only: it never changes a lease. One query per page,
   * over an index on the workId where the store has one. Leases that change between pages are seen as
   * they are when their page is read; none is skipped or repeated because of it.
   *
   * ```ts
   * const { leases, now } = await backend.list({ prefix: 'invoice-' })
   * for (const lease of leases) if (!lease.free) console.log(lease.workId, 'held by', lease.holderId)
   * ```
   */
  list?(options?: ListOptions): Promise<LeasePage>

  /**
   * Optional (`capabilities.revoke`): ends a wedged holder's lease from outside. Afterwards the old
   * holder's record is `FENCED` on every operation, and the next acquire gets the next token with
   * `cleanHandoff: false` (the holder did not finish cleanly); the checkpointed state is kept. A lease
   * that is already free is left as it is (`false`), one revoked before too: with a client clock its
   * expiry of "now − 1" may still be ahead of a clock behind, but it has no holder to end. `list` shows a revoked lease expired, not released, with
   * holderId `''` (no holder can have that id, so no record matches it again), and the size of the
   * state it kept as `checkpointBytes`.
   *
   * With `options.fencingToken` ({@link RevokeOptions}) it ends only that tenure: a live lease whose
   * stored token equals it. Any other state (a later token after a takeover, a token not yet handed
   * out, a lease released, expired or never taken) returns `false` and changes nothing. An operator
   * who looked at the lease first passes the token they saw, so a holder that took over since is
   * never the one revoked. Without it, whoever holds the lease when the write lands is revoked.
   *
   * One round trip on every path, with or without the token: the token is part of the one
   * conditional write (a predicate of the `UPDATE`, the filter, the condition expression, the
   * script's check), never a read followed by a write. Before any round trip (nothing changes then),
   * it throws `InvalidArgumentError` for a bad workId, options that are not an object, and a
   * `fencingToken` that is not a bigint in `1n..MAX_FENCING_TOKEN`; the options are read once
   * (`validateRevokeArgs`), so a getter answering differently on a second read cannot reach the store.
   * @returns whether a live lease (of that token, when given) was ended.
   *
   * ```ts
   * if (await backend.revoke('invoice-42')) console.log('revoked; the next holder reconciles')
   * // Only the tenure an operator saw: false if worker-a's token-7 lease ended or was taken over.
   * await backend.revoke('invoice-42', { fencingToken: 7n })
   * ```
   */
  revoke?(workId: string, options?: RevokeOptions): Promise<boolean>

  /**
   * Optional (`capabilities.renewMany`): renews many leases of one holder in one round trip, for a
   * process that holds thousands. Each record is judged on its own, exactly as {@link renew} judges it
   * (its own token and holder, never another record's token; the expiry max rule: `max(stored, now +
   * ttl)`, never shorter), and gets its own {@link RenewOutcome}, in input order: `'renewed'`,
   * `'expired'` (valid but past its expiry: renew's `LeaseExpiredError`) or `'fenced'` (not valid:
   * renew's `FencedError`). One lease's outcome never touches another's: a refused record changes
   * nothing, and no other record is renewed because of it.
   *
   * Cost: one round trip when every record is renewed. When the store refused some, a driver whose
   * write cannot say which it refused, or why, reads those records once more (one more round trip,
   * on this path only) to tell expired from fenced: a record still valid at that read was valid at the
   * write too (validity never comes back), so it was refused for its expiry; one found valid and live
   * was renewed (or extended by a concurrent checkpoint, which promises the same). An expired record
   * taken over between the two is reported `'fenced'`.
   *
   * A failure of the store throws for the whole call, as the client threw it; the outcomes of the
   * records are then unknown (the write may have landed), as after a lost `renew` reply, and the call
   * can be retried: renewing never changes a token. It is never reported as per-record outcomes. One
   * exception, for stores that keep documents of any shape (MongoDB, DynamoDB): a record whose stored
   * lease cannot be read (a document or item a hand-made write left without a readable expiry or
   * holder) costs that record alone, reported `'expired'` or `'fenced'` as far as its fields can be
   * read, where `renew` throws a store failure for it: thrown, it would fail the whole batch, whose
   * other renewals landed, and every lease in it with the batch.
   *
   * An empty list returns `[]` without a round trip. Before any round trip (nothing changes then), it
   * throws `InvalidArgumentError` for: a `records` that is not an array, a malformed record, records of
   * different holderIds, the same workId twice, more than `capabilities.renewMany.maxRecords`
   * records, a bad ttl. Every record and the list itself are read once (`validateRenewManyArgs`).
   *
   * ```ts
   * const { maxRecords } = backend.capabilities.renewMany!
   * for (let i = 0; i < records.length; i += maxRecords) {
   *   const chunk = records.slice(i, i + maxRecords)
   *   const outcomes = await backend.renewMany!(chunk, 30_000, { signal: AbortSignal.timeout(5_000) })
   *   outcomes.forEach((outcome, j) => {
   *     if (outcome !== 'renewed') console.log(chunk[j]!.workId, 'lost:', outcome)
   *   })
   * }
   * ```
   */
  renewMany?(records: readonly LeaseRecord[], ttlMs: number, options?: CallOptions): Promise<RenewOutcome[]>
}
