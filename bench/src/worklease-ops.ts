import { type Backend, isLeaseHeldError, type LeaseRecord } from '@worklease/spec'
import type { LeaseOps } from './lease-ops.js'

/**
 * A worklease `Backend` as {@link LeaseOps}: calls go straight to the driver; only acquire's
 * `LeaseHeldError` is turned into `null`, because a baseline has no exception to throw there.
 *
 * ```ts
 * const ops = workleaseOps(new MemoryBackend())
 * ```
 */
export function workleaseOps(backend: Backend): LeaseOps<LeaseRecord> {
  return {
    async acquire(workId, holderId, ttlMs) {
      try {
        return await backend.acquire(workId, holderId, ttlMs)
      } catch (error) {
        if (isLeaseHeldError(error)) return null
        throw error
      }
    },
    checkpoint: (record, state, ttlMs) => backend.checkpoint(record, state, ttlMs),
    renew: (record, ttlMs) => backend.renew(record, ttlMs),
    release: (record) => backend.release(record),
  }
}
