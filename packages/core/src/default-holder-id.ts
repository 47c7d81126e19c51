import { randomBytes } from 'node:crypto'
import { hostname } from 'node:os'
import { MAX_ID_LENGTH } from '@worklease/spec'

/**
 * A holderId unique per process and per call: `hostname-pid-random`. Readable in the store (which
 * host and process holds a lease) and never shared by two Leasers, since leases are not reentrant.
 *
 * ```ts
 * const leaser = new Leaser({ backend, ttlMs: 30_000, holderId: defaultHolderId() })
 * ```
 */
export function defaultHolderId(): string {
  const suffix = `-${process.pid}-${randomBytes(6).toString('hex')}`
  let host = ''
  try {
    host = hostname()
  } catch {
    host = 'host'
  }
  return `${host.slice(0, MAX_ID_LENGTH - suffix.length) || 'host'}${suffix}`
}
