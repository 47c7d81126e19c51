import { type Backend, isLeaseHeldError, type LeaseRecord } from '@worklease/spec'
import type { LeaseOps } from './lease-ops.js'

/**
 * A worklease `Backend` as {@link LeaseOps}: calls go straight to the driver, and the harness knows
 * acquire's `LeaseHeldError` as "held" (a baseline resolves `null` there instead).
 *
 * ```ts
 * const ops = workleaseOps(new MemoryBackend())
 * ```
 */
export function workleaseOps(backend: Backend): LeaseOps<LeaseRecord> {
  return {
    acquire: (workId, holderId, ttlMs) => backend.acquire(workId, holderId, ttlMs),
    isHeld: isLeaseHeldError,
    checkpoint: (record, state, ttlMs) => backend.checkpoint(record, state, ttlMs),
    renew: (record, ttlMs) => backend.renew(record, ttlMs),
    release: (record) => backend.release(record),
  }
}
