import { FencedError } from '@worklease/spec'
import { type FenceOptions, fenceField, fenceFilter } from './fence-filter.js'
import { fencedUpdate } from './fenced-update.js'
import type { LeaseDocumentLike } from './lease-collection.js'

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
  ): Promise<{ readonly matchedCount: number; readonly upsertedCount?: number }>
}

/** Options of {@link fencedUpdateOne}: the fence field, `upsert`, and any `updateOne` option. */
export interface FencedUpdateOneOptions extends FenceOptions {
  /**
   * Insert the document when nothing matches the filter's other conditions. A document that exists
   * but carries a higher token is then not inserted again (the server answers a duplicate key), and
   * the call returns `false`. A duplicate key on another unique index propagates, except on servers
   * whose error names no index (FerretDB 1.x), where it also reads as `false`. Default: `false`.
   *
   * ```ts
   * await fencedUpdateOne(orders, { _id: 'order-7' }, { $set: { total: 42 } }, token, { upsert: true })
   * ```
   */
  upsert?: boolean
  /**
   * Any other `updateOne` option (`session`, `writeConcern`, `signal`, ...) is passed through.
   *
   * ```ts
   * await fencedUpdateOne(orders, { _id: 'order-7' }, { $set: { total: 42 } }, token, { session })
   * ```
   */
  [option: string]: unknown
}

/** The server's duplicate-key error code. */
const DUPLICATE_KEY = 11000

/**
 * One fenced `updateOne`: your filter plus {@link fenceFilter}, your update plus {@link fencedUpdate}.
 * Resolves `true` when the write landed, `false` when the document carries a higher token (or, without
 * `upsert`, does not exist). Nothing is read first: the server checks and writes in one command.
 *
 * With `upsert`, two first writers of a new document can both miss it and both try to insert; the
 * loser's duplicate key is then retried once, now against the winner's document, so the higher token
 * still lands. A second duplicate key means the document exists with a higher token.
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
  const { field: _field, upsert = false, ...updateOptions } = options
  const field = fenceField(options)
  const fence = fenceFilter(token, { field })
  const and = filter.$and
  // $and rather than spreading $or: the caller's filter may have an $or of its own. Top-level equalities
  // stay where an upsert takes the new document's fields from.
  const fenced = { ...filter, $and: [...(Array.isArray(and) ? and : []), fence] }
  const write = fencedUpdate(update, token, { field })
  for (let attempt = 1; ; attempt++) {
    try {
      const result = await collection.updateOne(fenced, write, { ...updateOptions, upsert })
      return result.matchedCount > 0 || (result.upsertedCount ?? 0) > 0
    } catch (error) {
      if (!upsert || !isDuplicateOf(error, filter)) throw error
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
// some other unique index is the caller's own constraint, and propagates. A server that names no index
// (FerretDB 1.x sends no keyPattern) leaves no way to tell, and the duplicate counts as the fence.
function isDuplicateOf(error: unknown, filter: LeaseDocumentLike): boolean {
  if (typeof error !== 'object' || error === null) return false
  const { code, keyPattern } = error as { code?: unknown; keyPattern?: unknown }
  if (code !== DUPLICATE_KEY) return false
  if (typeof keyPattern !== 'object' || keyPattern === null) return true
  return Object.keys(keyPattern).every((key) => key in filter)
}
