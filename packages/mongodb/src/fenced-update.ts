import { InvalidArgumentError, validateFencingToken } from '@worklease/spec'
import { type FenceOptions, fenceField } from './fence-filter.js'
import type { LeaseDocumentLike } from './lease-collection.js'
import { snapshotDocument } from './read-once.js'

/**
 * The update part of a fenced write: your update operators plus `$set` of the fence field to `token`
 * (an int64), so the same command that passes {@link fenceFilter} raises the stored token. Only update
 * operator documents: a replacement document or an aggregation pipeline is refused.
 *
 * ```ts
 * await orders.updateOne(
 *   { _id: 'order-7', ...fenceFilter(token) },
 *   fencedUpdate({ $set: { total: 42 }, $inc: { edits: 1 } }, token),
 * )
 * ```
 */
export function fencedUpdate<U extends LeaseDocumentLike>(
  update: U,
  token: bigint,
  options: FenceOptions = {},
): U & { $set: LeaseDocumentLike } {
  const field = fenceField(options)
  validateFencingToken(token)
  const operators = snapshotDocument(update, 'update', 'a document of update operators (no pipeline)')
  if (Object.keys(operators).some((key) => !key.startsWith('$'))) {
    throw new InvalidArgumentError(
      'update must use update operators ($set, $inc, ...), not a replacement document',
    )
  }
  const set = operators.$set === undefined ? {} : snapshotDocument(operators.$set, 'update.$set')
  // The filter already guarantees the stored token is at most `token`, so $set raises it (never lowers).
  return { ...operators, $set: { ...set, [field]: token } } as U & { $set: LeaseDocumentLike }
}
