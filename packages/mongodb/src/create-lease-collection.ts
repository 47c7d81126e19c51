import { InvalidArgumentError } from '@worklease/spec'
import type { LeaseCollection } from './lease-collection.js'

/** The `Db` methods {@link createLeaseCollection} calls; a `Db` from the `mongodb` driver fits. */
export interface LeaseDatabase<C extends LeaseCollection> {
  collection(name: string): C
  createCollection(name: string): Promise<unknown>
  /** Only with `ifNotExists: false`, to look for the collection first. */
  listCollections(
    filter: { name: string },
    options: { nameOnly: true },
  ): { toArray(): Promise<readonly unknown[]> }
}

/** The collection name used when none is given. */
export const DEFAULT_LEASE_COLLECTION = 'worklease_leases'

/** Options of {@link createLeaseCollection}. */
export interface LeaseCollectionOptions {
  /**
   * The collection to create. Default: `'worklease_leases'`.
   *
   * ```ts
   * const { collection } = await createLeaseCollection(client.db('app'), { collection: 'leases' })
   * ```
   */
  collection?: string
  /**
   * Leave an existing collection in place instead of failing. Default: `true`, so the helper is safe to
   * call at every start; `false` makes an existing collection an error with MongoDB's `NamespaceExists`
   * code (48), at the cost of one `listCollections` first (MongoDB 7 and FerretDB 2 create nothing and
   * report success for an existing collection).
   *
   * ```ts
   * await createLeaseCollection(client.db('app'), { ifNotExists: false }) // throws if it exists
   * ```
   */
  ifNotExists?: boolean
}

/** What {@link createLeaseCollection} returns: the `MongoBackend` options that reach the collection. */
export interface CreatedLeaseCollection<C extends LeaseCollection> {
  /**
   * The lease collection, as `MongoBackend` takes it.
   *
   * ```ts
   * const backend = new MongoBackend({ ...(await createLeaseCollection(client.db('app'))) })
   * ```
   */
  collection: C
}

/** MongoDB's `NamespaceExists`: the collection is already there, which is what we wanted. */
const NAMESPACE_EXISTS = 48

/**
 * Creates the lease collection if it does not exist yet and returns the `MongoBackend` options that
 * reach it. Every operation addresses a lease by `_id`, so the default `_id` index is the only one
 * needed. Shaped like every driver's set-up helper: `(client, options)`, the name in `collection`
 * (default `'worklease_leases'`), idempotent unless `ifNotExists: false`.
 *
 * Never put a TTL index on it and never delete its documents: the document is what keeps a workId's
 * fencing tokens increasing forever, and a deleted one would start again from 1.
 *
 * ```ts
 * const { collection } = await createLeaseCollection(client.db('app'))
 * const backend = new MongoBackend({ collection })
 * ```
 */
export async function createLeaseCollection<C extends LeaseCollection>(
  db: LeaseDatabase<C>,
  options: LeaseCollectionOptions = {},
): Promise<CreatedLeaseCollection<C>> {
  if (typeof options !== 'object' || options === null) {
    throw new InvalidArgumentError('options must be an object')
  }
  const { collection: name = DEFAULT_LEASE_COLLECTION, ifNotExists = true } = options
  if (typeof name !== 'string' || name.length === 0) {
    throw new InvalidArgumentError('options.collection must be a non-empty string')
  }
  if (typeof ifNotExists !== 'boolean')
    throw new InvalidArgumentError('options.ifNotExists must be a boolean')
  // MongoDB 7 and FerretDB 2 answer `create` of an existing collection with success, so only a look
  // first can refuse it everywhere; the server's own NamespaceExists still covers a race with another.
  if (!ifNotExists && (await db.listCollections({ name }, { nameOnly: true }).toArray()).length > 0) {
    throw Object.assign(new Error(`collection ${name} already exists`), {
      code: NAMESPACE_EXISTS,
      codeName: 'NamespaceExists',
    })
  }
  try {
    await db.createCollection(name)
  } catch (error) {
    if (!ifNotExists || (error as { code?: unknown } | null)?.code !== NAMESPACE_EXISTS) throw error
  }
  return { collection: db.collection(name) }
}
