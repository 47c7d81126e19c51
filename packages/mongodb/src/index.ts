export { validateCollectionName } from './collection-name.js'
export {
  type CreatedLeaseCollection,
  createLeaseCollection,
  DEFAULT_LEASE_COLLECTION,
  type LeaseCollectionOptions,
  type LeaseDatabase,
} from './create-lease-collection.js'
export { type FenceOptions, fenceFilter } from './fence-filter.js'
export { fencedUpdate } from './fenced-update.js'
export {
  type FencedCollection,
  type FencedUpdateOneOptions,
  fencedUpdateOne,
  fencedUpdateOneOrThrow,
} from './fenced-update-one.js'
export type { LeaseCollection, LeaseDocumentLike } from './lease-collection.js'
export { MongoBackend, type MongoBackendOptions } from './mongo-backend.js'
