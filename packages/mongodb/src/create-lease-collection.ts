import type { LeaseCollection } from './lease-collection.js'

/** The `Db` methods {@link createLeaseCollection} calls; a `Db` from the `mongodb` driver fits. */
export interface LeaseDatabase<C extends LeaseCollection> {
  collection(name: string): C
  createCollection(name: string): Promise<unknown>
}

/** The collection name used when none is given. */
export const DEFAULT_LEASE_COLLECTION = 'worklease_leases'

/** MongoDB's `NamespaceExists`: the collection is already there, which is what we wanted. */
const NAMESPACE_EXISTS = 48

/**
 * Creates the lease collection if it does not exist yet and returns it. Every operation addresses a
 * lease by `_id`, so the default `_id` index is the only one needed.
 *
 * Never put a TTL index on it and never delete its documents: the document is what keeps a workId's
 * fencing tokens increasing forever, and a deleted one would start again from 1.
 *
 * ```ts
 * const collection = await createLeaseCollection(client.db('app'))
 * const backend = new MongoBackend({ collection })
 * ```
 */
export async function createLeaseCollection<C extends LeaseCollection>(
  db: LeaseDatabase<C>,
  name: string = DEFAULT_LEASE_COLLECTION,
): Promise<C> {
  try {
    await db.createCollection(name)
  } catch (error) {
    if ((error as { code?: unknown } | null)?.code !== NAMESPACE_EXISTS) throw error
  }
  return db.collection(name)
}
