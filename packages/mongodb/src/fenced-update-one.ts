import { FencedError, InvalidArgumentError } from '@worklease/spec'
import { type FenceOptions, fenceField, fenceFilter } from './fence-filter.js'
import { fencedUpdate } from './fenced-update.js'
import type { LeaseDocumentLike } from './lease-collection.js'
import { snapshotArray, snapshotDocument } from './read-once.js'

/**
 * The one `Collection` method {@link fencedUpdateOne} calls; a `Collection` of the `mongodb` driver
 * (any document type) satisfies it.
 *
 * ```ts
 * const orders: FencedCollection = client.db('app').collection('orders')
 * ```
 */
export interface FencedCollection {
  // `any`: the driver's Filter<T> and UpdateFilter<T> are generic over the collection's schema.
  updateOne(
    filter: any,
    update: any,
    options?: any,
  ): Promise<{
    readonly acknowledged?: boolean
    readonly matchedCount: number
    readonly upsertedCount?: number
  }>
}

/** Options of {@link fencedUpdateOne}: the fence field, `upsert`, and any `updateOne` option. */
export interface FencedUpdateOneOptions extends FenceOptions {
  /**
   * Insert the document when nothing matches the filter's conditions and the fence. Only safe when the
   * filter selects at most one document through a unique index (`_id`, or a field with a unique index
   * of its own): a document that exists with a higher token fails the fence, so the upsert tries to
   * insert it again, and only that index refuses (a duplicate key, and the call returns `false`).
   * With a filter on fields no unique index covers, nothing refuses: a stale token's upsert inserts a
   * second document and returns `true`. MongoDB's upsert works this way, and this helper cannot check
   * the indexes without another round trip.
   *
   * A duplicate key on some other unique index propagates, except on servers whose error does not
   * name the index (no `keyPattern`: FerretDB, 1.24 and 2.7 alike), where it also reads as
   * `false`. Default: `false`.
   *
   * ```ts
   * // `_id` is unique: a stale token finds the newer document in the way and returns false.
   * await fencedUpdateOne(orders, { _id: 'order-7' }, { $set: { total: 42 } }, token, { upsert: true })
   * // A filter on another field needs a unique index on it; without one, a stale token inserts a duplicate.
   * await orders.createIndex({ orderNumber: 1 }, { unique: true })
   * await fencedUpdateOne(orders, { orderNumber: 7 }, { $set: { total: 42 } }, token, { upsert: true })
   * ```
   */
  upsert?: boolean
  /**
   * Any other `updateOne` option (`session`, `writeConcern`, `signal`, ...) is passed through. An
   * unacknowledged write concern (`w: 0`) is refused: its reply says nothing of whether the fence let
   * the write through, which is this helper's whole answer.
   *
   * ```ts
   * await fencedUpdateOne(orders, { _id: 'order-7' }, { $set: { total: 42 } }, token, { session })
   * ```
   */
  [option: string]: unknown
}

// The driver reads `w` as a number where it can (Number('0') is 0).
const unacknowledged = (w: unknown) => w !== undefined && w !== null && w !== '' && Number(w) === 0

/** The server's duplicate-key error code. */
const DUPLICATE_KEY = 11000

/**
 * One fenced `updateOne`: your filter plus {@link fenceFilter}, your update plus {@link fencedUpdate}.
 * Resolves `true` when the write landed, `false` when the document carries a higher token (or, without
 * `upsert`, does not exist). Nothing is read first: the server checks and writes in one command.
 *
 * With `upsert`, the filter must select at most one document through a unique index, such as `_id`
 * (see {@link FencedUpdateOneOptions.upsert}). Two first writers of a new document can both miss it
 * and both try to insert; the loser's duplicate key is then retried once, now against the winner's
 * document, so the higher token still lands. A second duplicate key means the document exists with a
 * higher token.
 *
 * The filter, update and options are each read once; a filter whose `$and` is not an array, or an
 * argument whose getter throws, is `InvalidArgumentError` before any command.
 *
 * ```ts
 * const landed = await fencedUpdateOne(orders, { _id: 'order-7' }, { $set: { total: 42 } }, lease.fencingToken, {
 *   upsert: true,
 * })
 * if (!landed) return // a newer holder has written: stop working on this unit
 * ```
 */
export async function fencedUpdateOne(
  collection: FencedCollection,
  filter: LeaseDocumentLike,
  update: LeaseDocumentLike,
  token: bigint,
  options: FencedUpdateOneOptions = {},
): Promise<boolean> {
  // Each argument is read once, into a copy; only the copies are checked and sent.
  const {
    field: requestedField,
    upsert = false,
    ...updateOptions
  } = snapshotDocument(options, 'options', 'an object')
  const field = fenceField({ field: requestedField as string | undefined })
  if (typeof upsert !== 'boolean') throw new InvalidArgumentError('options.upsert must be a boolean')
  if (updateOptions.writeConcern !== undefined) {
    // A copy, checked and sent: a getter cannot answer w: 1 here and w: 0 to the driver.
    const writeConcern = snapshotDocument(updateOptions.writeConcern, 'options.writeConcern', 'an object')
    if (unacknowledged(writeConcern.w)) {
      throw new InvalidArgumentError(
        'options.writeConcern must be acknowledged (not w: 0): an unacknowledged write cannot tell whether the fence let it through',
      )
    }
    updateOptions.writeConcern = writeConcern
  }
  // The driver's older spelling, at the top level of the options.
  if (unacknowledged(updateOptions.w)) {
    throw new InvalidArgumentError(
      'options.w must be acknowledged (not 0): an unacknowledged write cannot tell whether the fence let it through',
    )
  }
  const fence = fenceFilter(token, { field })
  const conditions = snapshotDocument(filter, 'filter')
  const callerAnd = conditions.$and === undefined ? [] : snapshotArray(conditions.$and, 'filter.$and')
  // Dropping a malformed $and would write to documents the caller's condition excludes.
  if (callerAnd === undefined) throw new InvalidArgumentError('filter.$and must be an array of conditions')
  // $and rather than spreading $or: the caller's filter may have an $or of its own. Top-level equalities
  // stay where an upsert takes the new document's fields from.
  const fenced = { ...conditions, $and: [...callerAnd, fence] }
  const write = fencedUpdate(update, token, { field })
  for (let attempt = 1; ; attempt++) {
    try {
      const result = await collection.updateOne(fenced, write, { ...updateOptions, upsert })
      // w: 0 from the collection or client: the write may have landed; false would say it was fenced.
      if (result.acknowledged === false) {
        throw new Error(
          'the fenced update was not acknowledged (write concern w: 0): whether it landed cannot be told; use an acknowledged write concern',
        )
      }
      return result.matchedCount > 0 || (result.upsertedCount ?? 0) > 0
    } catch (error) {
      if (!upsert || !isDuplicateOf(error, [conditions, ...callerAnd])) throw error
      if (attempt === 2) return false
    }
  }
}

/**
 * {@link fencedUpdateOne} that throws `FencedError` (code `FENCED`) instead of resolving `false`.
 *
 * ```ts
 * await fencedUpdateOneOrThrow(orders, { _id: 'order-7' }, { $set: { total: 42 } }, token, { upsert: true })
 * ```
 */
export async function fencedUpdateOneOrThrow(
  collection: FencedCollection,
  filter: LeaseDocumentLike,
  update: LeaseDocumentLike,
  token: bigint,
  options: FencedUpdateOneOptions = {},
): Promise<void> {
  if (!(await fencedUpdateOne(collection, filter, update, token, options))) {
    throw new FencedError(
      'the fenced update matched no document: a newer fencing token has written, or the document does not exist',
    )
  }
}

// A duplicate on the key the filter names is the fence refusing an existing document; a duplicate on
// some other unique index is the caller's own constraint, and propagates. The filter names a key at its
// top level or in one of its $and conditions: an upsert takes equalities from both. A server that names
// no index (FerretDB 1.x and 2.x send no keyPattern) leaves no way to tell, and the duplicate counts as
// the fence.
function isDuplicateOf(error: unknown, conditions: readonly unknown[]): boolean {
  if (typeof error !== 'object' || error === null) return false
  const { code, keyPattern } = error as { code?: unknown; keyPattern?: unknown }
  if (code !== DUPLICATE_KEY) return false
  if (typeof keyPattern !== 'object' || keyPattern === null) return true
  const named = (key: string) =>
    conditions.some((condition) => typeof condition === 'object' && condition !== null && key in condition)
  return Object.keys(keyPattern).every(named)
}
