/**
 * A BSON document as this driver reads and writes it. Kept structural so the package does not import
 * the `mongodb` driver's types (any major the peer range allows fits).
 */
export type LeaseDocumentLike = Record<string, unknown>

/**
 * The few `Collection` methods {@link MongoBackend} calls. A `Collection` from the `mongodb` driver
 * (`db.collection('worklease_leases')`, versions 6 and 7) satisfies it as is.
 *
 * ```ts
 * import { MongoClient } from 'mongodb'
 *
 * const client = new MongoClient(process.env.MONGODB_URL!)
 * const collection: LeaseCollection = client.db('app').collection('worklease_leases')
 * ```
 */
export interface LeaseCollection {
  findOneAndUpdate(
    filter: LeaseDocumentLike,
    update: LeaseDocumentLike,
    options: LeaseDocumentLike,
  ): Promise<LeaseDocumentLike | null>
  updateOne(
    filter: LeaseDocumentLike,
    update: LeaseDocumentLike,
    options: LeaseDocumentLike,
  ): Promise<{ readonly matchedCount: number }>
  findOne(filter: LeaseDocumentLike, options: LeaseDocumentLike): Promise<LeaseDocumentLike | null>
  /**
   * Only for `renewMany`: one `update` command whose filter names every record with its own token.
   * Without it the backend does not declare `capabilities.renewMany`.
   */
  updateMany?(
    filter: LeaseDocumentLike,
    update: LeaseDocumentLike,
    options: LeaseDocumentLike,
  ): Promise<{ readonly matchedCount: number }>
  /** Only for `list`: one `find` whose options carry sort, limit and batchSize. */
  find(filter: LeaseDocumentLike, options: LeaseDocumentLike): { toArray(): Promise<LeaseDocumentLike[]> }
}
