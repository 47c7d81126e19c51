export { MemoryBackend, type MemoryBackendOptions } from './memory-backend.js'
export { MemoryStore, type StoredLease } from './memory-store.js'
