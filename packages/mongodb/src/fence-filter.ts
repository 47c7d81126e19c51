import { InvalidArgumentError, validateFencingToken } from '@worklease/spec'
import type { LeaseDocumentLike } from './lease-collection.js'

/** Where the fencing helpers keep the highest token in your documents. */
export interface FenceOptions {
  /**
   * The field of your documents that holds the highest fencing token written to each (an int64; the
   * helpers write it as one). A document without it (or with `null`) has never been written under a
   * lease and accepts any token. Dotted paths work. Default: `'fencingToken'`.
   *
   * ```ts
   * await collection.updateOne({ _id: 7, ...fenceFilter(token, { field: 'lease.token' }) }, update)
   * ```
   */
  field?: string
}

/**
 * The filter part of a fenced write: matches a document whose stored token is at most `token` (`<=`:
 * a holder writes many times under one token) or that has none yet. Spread it into your filter (or put
 * it in an `$and` if your filter has its own `$or`) and raise the stored token in the same update with
 * {@link fencedUpdate}; {@link fencedUpdateOne} does both.
 *
 * The token goes out as a BSON int64 (a `bigint`), so tokens above 2^53 compare exactly.
 *
 * ```ts
 * const result = await orders.updateOne(
 *   { _id: 'order-7', ...fenceFilter(lease.fencingToken) },
 *   fencedUpdate({ $set: { total: 42 } }, lease.fencingToken),
 * )
 * const landed = result.matchedCount === 1
 * ```
 */
export function fenceFilter(token: bigint, options: FenceOptions = {}): { $or: LeaseDocumentLike[] } {
  const field = fenceField(options)
  validateFencingToken(token)
  // `null` matches a missing field too. A stored null would otherwise never compare $lte to a number.
  return { $or: [{ [field]: { $lte: token } }, { [field]: null }] }
}

/** The fence field after checking the options. */
export function fenceField(options: FenceOptions | undefined): string {
  if (options !== undefined && (typeof options !== 'object' || options === null)) {
    throw new InvalidArgumentError('options must be an object')
  }
  let given: unknown
  try {
    given = options?.field
  } catch (error) {
    throw new InvalidArgumentError('options could not be read', { cause: error })
  }
  const field = given ?? 'fencingToken'
  // U+0000 ends a BSON key, and a lone surrogate has no UTF-8: either would name another field. A
  // dotted path is a nested field; each of its parts must be a field name too ('a..b', 'x.', 'a.$b'
  // are refused by the server, after the round trip).
  if (
    typeof field !== 'string' ||
    /[\0\p{Surrogate}]/u.test(field) ||
    field.split('.').some((part) => part.length === 0 || part.startsWith('$'))
  ) {
    throw new InvalidArgumentError(
      'options.field must be a field name or a dotted path of them (none empty, none an operator starting with $, no U+0000 or lone surrogate)',
    )
  }
  return field
}
