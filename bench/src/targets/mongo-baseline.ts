import type { Collection, Document } from 'mongodb'
import { type BaselineLease, type LeaseOps, LostLeaseError } from '../lease-ops.js'

// Tokens come back as bigint and state as bytes, as anyone who needs exact fencing tokens asks for.
const READ_BSON = { useBigInt64: true, promoteBuffers: true } as const
// The driver pins both on every command, whatever the client's defaults (mongo-backend.ts says why).
const WRITE = { writeConcern: { w: 'majority' } } as const
const READ = { readPreference: 'primary', readConcern: { level: 'local' } } as const
const MAX_TOKEN = 9223372036854775807n

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
 * The commands @worklease/mongodb sends in a lease cycle, copied from its mongo-backend.ts and
 * written by hand, through the same `MongoClient`: the upserting findAndModify that takes a free
 * lease under the token ceiling (E11000 means held; the driver then reads the holder once, and so
 * does this), the ordered checkpoint with its `$max` expiry (and the driver's second update when it
 * was superseded), the renew that only extends (and its read naming a refusal), the release; every
 * write majority-acknowledged. No validation, no record objects, no error classes. The bench compares
 * the shape of every command both sides sent (`statementDrift` in the results), so this file cannot
 * drift from the driver unnoticed.
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
    ...WRITE,
  } as const
  const valid = (held: BaselineLease): Document => ({
    _id: held.workId as never,
    fencingToken: held.token,
    holderId: held.holderId,
    released: false,
  })
  // Checkpoints are ordered by a sequence that only grows, seeded as the driver's are (microseconds).
  let sequence = Date.now() * 1000
  return {
    async acquire(workId, holderId, ttlMs) {
      const now = Date.now()
      try {
        const document = await collection.findOneAndUpdate(
          {
            _id: workId as never,
            fencingToken: { $lt: MAX_TOKEN },
            $or: [{ expiresAt: { $lte: new Date(now) } }, { released: true }],
          },
          {
            $inc: { fencingToken: 1n },
            $set: { holderId, expiresAt: new Date(now + ttlMs), released: false },
            $setOnInsert: { releasedToken: 0n },
          },
          acquireOptions,
        )
        return { workId, holderId, token: document?.fencingToken as bigint }
      } catch (error) {
        if (!isLostUpsert(error)) throw error
        // The driver reads the holder once to name LEASE_HELD; a hand-writer who reports it does too.
        await collection.findOne(
          { _id: workId as never },
          { projection: { fencingToken: 1, holderId: 1, expiresAt: 1, released: 1 }, ...READ_BSON, ...READ },
        )
        return null
      }
    },
    async checkpoint(held, state, ttlMs) {
      const seq = ++sequence
      const extend = { $max: { expiresAt: new Date(Date.now() + ttlMs) } }
      const stored = await collection.updateOne(
        {
          ...valid(held),
          $or: [{ checkpointToken: { $ne: held.token } }, { checkpointSequence: { $lt: seq } }],
        },
        { $set: { state, checkpointToken: held.token, checkpointSequence: seq }, ...extend },
        WRITE,
      )
      if (stored.matchedCount === 1) return
      const extended = await collection.updateOne(valid(held), extend, WRITE)
      if (extended.matchedCount === 0) throw new LostLeaseError('checkpoint')
    },
    async renew(held, ttlMs) {
      const now = Date.now()
      const result = await collection.updateOne(
        { ...valid(held), expiresAt: { $gt: new Date(now) } },
        { $max: { expiresAt: new Date(now + ttlMs) } },
        WRITE,
      )
      if (result.matchedCount === 1) return
      await collection.findOne(valid(held), { projection: { _id: 1 }, ...READ })
      throw new LostLeaseError('renew')
    },
    async release(held) {
      const result = await collection.updateOne(
        valid(held),
        {
          $set: { released: true, releasedToken: held.token },
          $min: { expiresAt: new Date(Date.now() - 1) },
        },
        WRITE,
      )
      if (result.matchedCount === 0) throw new LostLeaseError('release')
    },
  }
}
