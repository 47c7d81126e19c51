import { InvalidArgumentError, readOnce } from '@worklease/spec'
import { validateCollectionName } from './collection-name.js'
import type { LeaseCollection } from './lease-collection.js'

/** The `Db` methods {@link createLeaseCollection} calls; a `Db` from the `mongodb` driver fits. */
export interface LeaseDatabase<C extends LeaseCollection> {
  collection(name: string): C
  createCollection(name: string): Promise<unknown>
  /** To look for the collection first, and read its default collation (as documents: `raw: false`). */
  listCollections(
    filter: { name: string },
    options: { raw: false },
  ): { toArray(): Promise<readonly unknown[]> }
}

// A db given `raw: true` would list BSON bytes, whose collation nobody reads.
const LISTED_AS_DOCUMENTS = { raw: false } as const

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
   * code (48) (MongoDB 7 and FerretDB 2 create nothing and report success for an existing collection,
   * so the helper looks first either way).
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
 * An existing collection must compare strings simply (binary): one whose default collation ignores
 * case or accents would match `'Job'` for `'job'`, two workIds sharing one lease and its tokens. It
 * must also keep every document: a capped collection evicts old ones, a TTL index (or a clustered
 * collection's `expireAfterSeconds`) deletes expired ones, and a view or a time series collection
 * holds no lease documents at all. Each is refused with `INVALID_ARGUMENT`, as the
 * `listCollections` this helper sends reports it (and, for a TTL index, a `listIndexes` of the
 * existing collection, where its collection has that method).
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
  const { collection: name = DEFAULT_LEASE_COLLECTION, ifNotExists = true } = readOnce(
    options,
    ['collection', 'ifNotExists'],
    'options',
  ) as LeaseCollectionOptions
  if (
    typeof db !== 'object' ||
    db === null ||
    typeof db.listCollections !== 'function' ||
    typeof db.createCollection !== 'function' ||
    typeof db.collection !== 'function'
  ) {
    throw new InvalidArgumentError('db must be a MongoDB Db')
  }
  validateCollectionName(name, 'options.collection')
  if (typeof ifNotExists !== 'boolean')
    throw new InvalidArgumentError('options.ifNotExists must be a boolean')
  // MongoDB 7 and FerretDB 2 answer `create` of an existing collection with success, so only a look
  // first can refuse it everywhere; the server's own NamespaceExists still covers a race with another.
  const [existing] = await db.listCollections({ name }, LISTED_AS_DOCUMENTS).toArray()
  if (existing !== undefined) {
    if (!ifNotExists) {
      throw Object.assign(new Error(`collection ${name} already exists`), {
        code: NAMESPACE_EXISTS,
        codeName: 'NamespaceExists',
      })
    }
    return { collection: await fitCollection(db, name, existing) }
  }
  try {
    await db.createCollection(name)
  } catch (error) {
    if (!ifNotExists || (error as { code?: unknown } | null)?.code !== NAMESPACE_EXISTS) throw error
    // Another process created it since the look: with its own options, so look again.
    const [created] = await db.listCollections({ name }, LISTED_AS_DOCUMENTS).toArray()
    return { collection: await fitCollection(db, name, created) }
  }
  return { collection: db.collection(name) }
}

/** The existing collection, once its listing and its indexes show it keeps lease documents as leases need. */
async function fitCollection<C extends LeaseCollection>(
  db: LeaseDatabase<C>,
  name: string,
  listed: unknown,
): Promise<C> {
  refuseNonSimpleCollation(name, listed)
  refuseDocumentLoss(name, listed)
  const collection = db.collection(name)
  const { listIndexes } = collection as { listIndexes?: unknown }
  if (typeof listIndexes === 'function') {
    const indexes: unknown[] = await listIndexes.call(collection).toArray()
    const ttl = indexes.find(
      (index) => (index as { expireAfterSeconds?: unknown })?.expireAfterSeconds !== undefined,
    )
    if (ttl !== undefined) {
      throw new InvalidArgumentError(
        `collection ${name} has a TTL index (${String((ttl as { name?: unknown }).name)}): it deletes expired lease documents, and a workId's fencing tokens would start again from 1; drop the index`,
      )
    }
  }
  return collection
}

/** What a listing says of a collection that would lose lease documents, or holds none. */
function refuseDocumentLoss(name: string, listed: unknown): void {
  const { type, options } = (listed ?? {}) as {
    type?: unknown
    options?: { capped?: unknown; expireAfterSeconds?: unknown; timeseries?: unknown }
  }
  const why =
    type !== undefined && type !== 'collection'
      ? `is a ${String(type)}, not a collection of documents`
      : options?.capped === true
        ? 'is capped: it evicts old documents'
        : options?.expireAfterSeconds !== undefined
          ? 'expires its documents (expireAfterSeconds)'
          : options?.timeseries !== undefined
            ? 'is a time series collection'
            : undefined
  if (why === undefined) return
  throw new InvalidArgumentError(
    `collection ${name} ${why}: a workId's lease document must be kept for good, or its fencing tokens would start again from 1; use a plain collection`,
  )
}

/**
 * MongoDB lists a collection's default collation under `options.collation` (none, or locale
 * `'simple'`, is binary comparison). FerretDB keeps no collation: it lists none.
 */
function refuseNonSimpleCollation(name: string, listed: unknown): void {
  const collation = (listed as { options?: { collation?: { locale?: unknown; strength?: unknown } } })
    ?.options?.collation
  if (collation === undefined || collation === null || collation.locale === 'simple') return
  throw new InvalidArgumentError(
    `collection ${name} has a default collation (locale ${String(collation.locale)}, strength ${String(collation.strength)}): workIds it compares as equal, such as 'Job' and 'job', would share one lease; use a collection with the simple (binary) collation`,
  )
}
