import type { Collection, Document } from 'mongodb'
import { type BaselineLease, type LeaseOps, LostLeaseError } from '../lease-ops.js'

// Tokens come back as bigint and state as bytes, as anyone who needs exact fencing tokens asks for.
const READ_BSON = { useBigInt64: true, promoteBuffers: true } as const

/**
 * A losing upsert, as the driver tells it: E11000, or FerretDB 2's code 1 with PostgreSQL's unique
 * violation on the collection's primary key (`_id`), which it sends instead when upserts race.
 */
function isLostUpsert(error: unknown): boolean {
  const { code, message } = error as { code?: unknown; message?: unknown }
  if (code === 11000) return true
  return (
    code === 1 &&
    typeof message === 'string' &&
    /duplicate key value violates unique constraint "collection_pk_\d+"/.test(message)
  )
}

/**
 * The commands a careful developer would write by hand for the lease document @worklease/mongodb
 * uses (its mongo-backend.ts): one upserting findOneAndUpdate to acquire (E11000 means held), one
 * conditional updateOne per other call, checked by `matchedCount`.
 *
 * ```ts
 * const ops = mongoBaseline(client.db('bench').collection('baseline'), { projection: false })
 * ```
 */
export function mongoBaseline(
  collection: Collection<Document>,
  options: { projection: boolean },
): LeaseOps<BaselineLease> {
  const acquireOptions = {
    upsert: true,
    returnDocument: 'after',
    ...(options.projection ? { projection: { fencingToken: 1 } } : {}),
    includeResultMetadata: false,
    ...READ_BSON,
  } as const
  const valid = (held: BaselineLease): Document => ({
    _id: held.workId as never,
    fencingToken: held.token,
    holderId: held.holderId,
    released: false,
  })
  return {
    async acquire(workId, holderId, ttlMs) {
      const now = Date.now()
      try {
        const document = await collection.findOneAndUpdate(
          { _id: workId as never, $or: [{ expiresAt: { $lte: new Date(now) } }, { released: true }] },
          {
            $inc: { fencingToken: 1n },
            $set: { holderId, expiresAt: new Date(now + ttlMs), released: false },
            $setOnInsert: { releasedToken: 0n },
          },
          acquireOptions,
        )
        return { workId, holderId, token: document?.fencingToken as bigint }
      } catch (error) {
        if (isLostUpsert(error)) return null
        throw error
      }
    },
    async checkpoint(held, state, ttlMs) {
      const result = await collection.updateOne(valid(held), {
        $set: { state, expiresAt: new Date(Date.now() + ttlMs) },
      })
      if (result.matchedCount === 0) throw new LostLeaseError('checkpoint')
    },
    async renew(held, ttlMs) {
      const now = Date.now()
      const result = await collection.updateOne(
        { ...valid(held), expiresAt: { $gt: new Date(now) } },
        { $set: { expiresAt: new Date(now + ttlMs) } },
      )
      if (result.matchedCount === 0) throw new LostLeaseError('renew')
    },
    async release(held) {
      const result = await collection.updateOne(valid(held), {
        $set: { released: true, releasedToken: held.token },
        $min: { expiresAt: new Date(Date.now() - 1) },
      })
      if (result.matchedCount === 0) throw new LostLeaseError('release')
    },
  }
}
