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
  const matched = { holderId, released: false, expiresAt: { $gt: new Date(now) } }
  const workIds = workIdsOf(records)
  let filter: LeaseDocumentLike
  const fencingToken = records[0]?.fencingToken
  if (records.every((record) => record.fencingToken === fencingToken)) {
    // One token (a batch of first leases, say): its clause alone is the filter, each workId sent once.
    filter = { _id: { $in: workIds }, fencingToken, ...matched }
  } else {
    const clauses: LeaseDocumentLike[] = []
    for (const [token, sharing] of groupByToken(records)) {
      clauses.push({ fencingToken: token, _id: sharing.length === 1 ? sharing[0] : { $in: sharing } })
    }
    // The outer `$in` is what the `_id` index finds the batch by; the `$or` only filters what it found.
    filter = { _id: { $in: workIds }, ...matched, $or: clauses }
  }
  return updateMany.call(collection, filter, { $max: { expiresAt: new Date(now + ttlMs) } }, options)
}

// Indexed loops: the records come frozen, and iterating a frozen array allocates a result a record.
function workIdsOf(records: readonly LeaseRecord[]): string[] {
  const workIds = new Array<string>(records.length)
  for (let i = 0; i < records.length; i++) workIds[i] = records[i]!.workId
  return workIds
}

function groupByToken(records: readonly LeaseRecord[]): Map<bigint, string[]> {
  const workIdsByToken = new Map<bigint, string[]>()
  for (let i = 0; i < records.length; i++) {
    const { fencingToken, workId } = records[i]!
    const workIds = workIdsByToken.get(fencingToken)
    if (workIds) workIds.push(workId)
    else workIdsByToken.set(fencingToken, [workId])
  }
  return workIdsByToken
}
