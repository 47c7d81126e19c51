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
  // Any other operator on the fence field, its parent or a path inside it (`$inc`, `$unset`, `$set` of
  // `field.x`) conflicts with the fence's $set: the server refuses the command, after a round trip.
  // Each operator's fields are read once, and what was checked is what is sent.
  const checked: Record<string, LeaseDocumentLike> = {}
  for (const [operator, fields] of Object.entries(operators)) {
    // Absent, as the driver reads an undefined operator.
    if (fields === undefined) continue
    // Every update operator takes a document of fields; the server refuses anything else, after a
    // round trip.
    if (typeof fields !== 'object' || fields === null || Array.isArray(fields)) {
      throw new InvalidArgumentError(`update.${operator} must be a document of fields`)
    }
    const copy = snapshotDocument(fields, `update.${operator}`)
    checked[operator] = copy
    // $rename writes the paths it names as values too.
    const paths = operator === '$rename' ? [...Object.keys(copy), ...Object.values(copy)] : Object.keys(copy)
    for (const path of paths) {
      if (typeof path !== 'string') continue
      const overlaps = path === field || path.startsWith(`${field}.`) || field.startsWith(`${path}.`)
      if (overlaps && !(operator === '$set' && path === field)) {
        throw new InvalidArgumentError(
          `update.${operator} touches ${JSON.stringify(path)}, which overlaps the fence field ${JSON.stringify(field)}`,
        )
      }
    }
  }
  return { ...checked, $set: { ...checked.$set, [field]: token } } as U & { $set: LeaseDocumentLike }
}
