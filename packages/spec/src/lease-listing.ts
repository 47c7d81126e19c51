import type { CallOptions } from './call-options.js'

/** Options of {@link Backend.list}. */
export interface ListOptions extends CallOptions {
  /**
   * Only workIds that start with this string, compared literally (no wildcards: `%`, `_`, `*` and
   * regular-expression characters are just characters). Default: `''`, every workId.
   *
   * ```ts
   * const page = await backend.list({ prefix: 'tenant-7/' })
   * ```
   */
  prefix?: string
  /**
   * The `cursor` of the previous page: this page starts after it. Default: the first page.
   *
   * ```ts
   * let cursor: string | undefined
   * do {
   *   const page = await backend.list({ cursor, limit: 500 })
   *   for (const lease of page.leases) console.log(lease.workId)
   *   cursor = page.cursor
   * } while (cursor !== undefined)
   * ```
   */
  cursor?: string
  /**
   * Most leases on one page, 1..1000. Default: 100.
   *
   * ```ts
   * const page = await backend.list({ limit: 20 })
   * ```
   */
  limit?: number
}

/** One lease as {@link Backend.list} sees it: what an operator needs, never the checkpoint's bytes. */
export interface LeaseListing {
  readonly workId: string
  /** The last holder; after a release or expiry, the one that held it last. */
  readonly holderId: string
  /** The last token handed out for this workId. */
  readonly fencingToken: bigint
  /** When the last lease expires (or expired), on the backend's clock. */
  readonly expiresAt: Date
  /** Whether the last lease ended by release (or was revoked: then `false` and expired). */
  readonly released: boolean
  /**
   * Whether the last lease has ended: released, or expired by the page's `now`. An acquire then takes
   * it, unless its token is `MAX_FENCING_TOKEN` (`TOKENS_EXHAUSTED`).
   */
  readonly free: boolean
  /** Size of the last checkpointed state in bytes, or `null` if none was ever stored. */
  readonly checkpointBytes: number | null
}

/** What {@link Backend.list} returns. */
export interface LeasePage {
  /** In ascending order of workId by Unicode code point (the UTF-8 byte order of SQL and MongoDB). */
  readonly leases: readonly LeaseListing[]
  /** The store's "now" as of this page, so `expiresAt` can be judged on the backend's clock. */
  readonly now: Date
  /** Pass as `cursor` for the next page; absent on the last page. */
  readonly cursor?: string
}
