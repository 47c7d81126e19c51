export {
  createLeaseCollection,
  DEFAULT_LEASE_COLLECTION,
  type LeaseDatabase,
} from './create-lease-collection.js'
export type { LeaseCollection, LeaseDocumentLike } from './lease-collection.js'
export { MongoBackend, type MongoBackendOptions } from './mongo-backend.js'
