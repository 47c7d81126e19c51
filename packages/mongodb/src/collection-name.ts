import { InvalidArgumentError } from '@worklease/spec'

/**
 * Checks a collection name by MongoDB's own rules, before any round trip: a non-empty string with no
 * `$`, U+0000 or lone surrogate, not beginning with `.` or `system.`, at most 255 bytes of UTF-8 (the
 * database name's share of the namespace is left to the server). Throws an `InvalidArgumentError`
 * that starts with `label` and the name. `createLeaseCollection` checks its `collection` with it, and
 * the worklease CLI its `--table`.
 *
 * ```ts
 * validateCollectionName(process.env.LEASE_COLLECTION, 'LEASE_COLLECTION')
 * ```
 */
export function validateCollectionName(name: unknown, label = 'collection'): asserts name is string {
  if (typeof name !== 'string' || name.length === 0) {
    throw new InvalidArgumentError(`${label} must be a non-empty string`)
  }
  // A lone surrogate has no UTF-8: two names differing only in one would name the same collection.
  if (/[$\0\p{Surrogate}]/u.test(name) || name.startsWith('.') || name.startsWith('system.')) {
    throw new InvalidArgumentError(
      `${label} ${JSON.stringify(name)} is not a collection name MongoDB accepts: no $, U+0000 or lone surrogate, and it must not begin with "." or "system."`,
    )
  }
  if (Buffer.byteLength(name) > 255) {
    throw new InvalidArgumentError(`${label} must be at most 255 bytes of UTF-8`)
  }
}
