import type { LeaseListing } from '@worklease/spec'

/** What an operator reads about a lease: `status` decodes the released mark, expiry and revocation. */
export type LeaseStatus = 'held' | 'expired' | 'released' | 'revoked'

/**
 * One lease as `--json` prints it, one object per line. Tokens are decimal strings (they exceed
 * JSON's exact integers); times are ISO 8601; `expiresInMs` is measured on the store's clock.
 */
export interface LeaseRow {
  readonly workId: string
  readonly holderId: string
  readonly fencingToken: string
  readonly status: LeaseStatus
  readonly free: boolean
  readonly released: boolean
  readonly expiresAt: string
  readonly expiresInMs: number
  readonly checkpointBytes: number | null
  /** The store's clock when the row was read. */
  readonly now: string
}

export function statusOf(lease: LeaseListing): LeaseStatus {
  if (lease.released) return 'released'
  // A revoked lease keeps no holder: no valid holderId is empty (see Backend.revoke).
  if (lease.holderId === '') return 'revoked'
  return lease.free ? 'expired' : 'held'
}

export function toRow(lease: LeaseListing, now: Date): LeaseRow {
  return {
    workId: lease.workId,
    holderId: lease.holderId,
    fencingToken: String(lease.fencingToken),
    status: statusOf(lease),
    free: lease.free,
    released: lease.released,
    expiresAt: lease.expiresAt.toISOString(),
    expiresInMs: lease.expiresAt.getTime() - now.getTime(),
    checkpointBytes: lease.checkpointBytes,
    now: now.toISOString(),
  }
}

/** `1.2 s`, `-3 min`, `2 h`: how far the expiry is from the store's now, short enough for a column. */
export function formatDuration(ms: number): string {
  const sign = ms < 0 ? '-' : ''
  const abs = Math.abs(ms)
  if (abs < 1_000) return `${sign}${abs} ms`
  if (abs < 60_000) return `${sign}${(abs / 1_000).toFixed(1)} s`
  if (abs < 3_600_000) return `${sign}${Math.round(abs / 60_000)} min`
  if (abs < 86_400_000) return `${sign}${(abs / 3_600_000).toFixed(1)} h`
  return `${sign}${(abs / 86_400_000).toFixed(1)} d`
}

export function formatBytes(bytes: number | null): string {
  if (bytes === null) return '-'
  if (bytes < 1024) return `${bytes} B`
  if (bytes < 1024 * 1024) return `${(bytes / 1024).toFixed(1)} KiB`
  return `${(bytes / 1024 / 1024).toFixed(1)} MiB`
}
