import type { LeaseRecord } from '@worklease/spec'
import type { LeaseCollection, LeaseDocumentLike } from './lease-collection.js'

/**
 * Above this many distinct tokens in one batch, the `$or` costs the server more than one `updateOne`
 * per lease does. Measured on FerretDB 2.7 with 1,000 leases a batch: 128 distinct tokens took
 * 16 ms a command, 400 took 30, 1,000 took 72-92, the statement per lease 43-53 whatever the tokens.
 */
export const MAX_TOKEN_CLAUSES = 256

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
 * Usually one `updateMany` whose `$or` has a clause per distinct token, `{ fencingToken: t, _id:
 * { $in: the workIds renewed under t } }`, so a document matches only with its own record's token:
 * it sends about a third of the bytes of a statement per lease and costs the client a third of the
 * CPU. The server tests each document against the clauses in turn, so a batch of many distinct
 * tokens goes out as an unordered `bulkWrite` of one `updateOne` per lease instead (one `update`
 * command all the same), where the collection has one.
 */
export function renewManyUpdate(
  collection: LeaseCollection,
  { records, holderId, now, ttlMs, options }: RenewManyUpdate,
): Promise<{ readonly matchedCount: number }> {
  const extend = { $max: { expiresAt: new Date(now + ttlMs) } }
  const live = { $gt: new Date(now) }
  const workIdsByToken = groupByToken(records)
  const { bulkWrite, updateMany } = collection
  if (typeof updateMany !== 'function') throw new TypeError('the collection has no updateMany')
  if (workIdsByToken.size > MAX_TOKEN_CLAUSES && typeof bulkWrite === 'function') {
    const operations = records.map(({ workId, fencingToken }) => ({
      updateOne: {
        filter: { _id: workId, fencingToken, holderId, released: false, expiresAt: live },
        update: extend,
      },
    }))
    return bulkWrite.call(collection, operations, { ...options, ordered: false })
  }
  const clauses: LeaseDocumentLike[] = []
  for (const [fencingToken, workIds] of workIdsByToken) {
    clauses.push({ fencingToken, _id: workIds.length === 1 ? workIds[0] : { $in: workIds } })
  }
  // The outer `$in` is what an index can find the batch by; the `$or` alone may be scanned.
  const filter = {
    _id: { $in: records.map((record) => record.workId) },
    holderId,
    released: false,
    expiresAt: live,
    $or: clauses,
  }
  return updateMany.call(collection, filter, extend, options)
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
