import type { LeaseRecord } from '@worklease/spec'
import type { LeaseCollection, LeaseDocumentLike } from './lease-collection.js'

/** What one renewMany command is given: the batch (one holder, unique workIds) and its clock. */
export interface RenewManyUpdate {
  readonly records: readonly LeaseRecord[]
  readonly holderId: string
  readonly now: number
  readonly ttlMs: number
  readonly options: LeaseDocumentLike
}

/**
 * The one write of `renewMany`: each record renewed under its own token, with `renew`'s filter (its
 * holder, not released, not expired) and `$max` on the expiry. Resolves with how many matched.
 *
 * One `updateMany` whose `$or` has a clause per distinct token, `{ fencingToken: t, _id: { $in: the
 * workIds renewed under t } }`, so a document matches only with its own record's token. It costs the
 * client about a third of the CPU of a `bulkWrite` of one `updateOne` per lease; the server tests
 * each document against the clauses in turn, so its cost grows with the number of distinct tokens in
 * the batch (the README has both measurements). A batch of one token is that one clause, no `$or`.
 */
export function renewManyUpdate(
  collection: LeaseCollection,
  { records, holderId, now, ttlMs, options }: RenewManyUpdate,
): Promise<{ readonly matchedCount: number }> {
  const updateMany = collection.updateMany
  if (typeof updateMany !== 'function') throw new TypeError('the collection has no updateMany')
  const byToken = groupByToken(records)
  const matched = { holderId, released: false, expiresAt: { $gt: new Date(now) } }
  let filter: LeaseDocumentLike
  if (byToken.size === 1) {
    // One token (a batch of first leases, say): its clause alone is the filter, each workId sent once.
    const [fencingToken, workIds] = byToken.entries().next().value as [bigint, string[]]
    filter = { _id: { $in: workIds }, fencingToken, ...matched }
  } else {
    const clauses: LeaseDocumentLike[] = []
    for (const [fencingToken, workIds] of byToken) {
      clauses.push({ fencingToken, _id: workIds.length === 1 ? workIds[0] : { $in: workIds } })
    }
    // The outer `$in` is what the `_id` index finds the batch by; the `$or` only filters what it found.
    filter = { _id: { $in: records.map((record) => record.workId) }, ...matched, $or: clauses }
  }
  return updateMany.call(collection, filter, { $max: { expiresAt: new Date(now + ttlMs) } }, options)
}

function groupByToken(records: readonly LeaseRecord[]): Map<bigint, string[]> {
  const workIdsByToken = new Map<bigint, string[]>()
  for (const { fencingToken, workId } of records) {
    const workIds = workIdsByToken.get(fencingToken)
    if (workIds) workIds.push(workId)
    else workIdsByToken.set(fencingToken, [workId])
  }
  return workIdsByToken
}
