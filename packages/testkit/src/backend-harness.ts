import type { Backend, Clock } from '@worklease/spec'

/** How the testkit opens a backend: one simulated process, with its own clock. */
export interface OpenOptions {
  /**
   * The clock this simulated process sees. Client-clock backends must use it for every "now";
   * server-clock backends ignore it (the testkit then uses real short ttls and waits).
   */
  readonly clock: Clock
}

/**
 * Fresh, isolated storage (its own table, collection, key prefix or store) for one test case, and a
 * way to open backends over it as separate processes would have them.
 *
 * ```ts
 * const factory: BackendFactory = async () => {
 *   const table = `lease_${randomUUID().replaceAll('-', '')}`
 *   await createLeaseTable(db, { table })
 *   let statements = 0
 *   return {
 *     open: ({ clock }) => new KyselyBackend({ db, table }),
 *     roundTrips: () => statements,
 *     close: () => db.schema.dropTable(table).execute(),
 *   }
 * }
 * ```
 */
export interface BackendHarness {
  /**
   * Opens a backend over this harness's storage. Each call is a separate "process": backends opened
   * here must see each other's writes, and for client-clock backends each uses its own `clock`.
   * Opening over a separate connection, where the driver has one, lets the race cases test atomicity
   * across connections.
   */
  open(options: OpenOptions): Backend | Promise<Backend>
  /**
   * Round trips to the store (SQL statements, database commands, HTTP requests) issued so far by
   * every backend this harness opened. When given, the suite asserts one per operation on the happy
   * path and none for rejected input.
   */
  roundTrips?(): number
  /**
   * Stores a released lease on `workId` at fencing token `token` straight into the storage (not
   * through the backend), as if `token` acquires had come before. The token-ceiling cases need it to
   * reach `MAX_FENCING_TOKEN` without 2^63 acquires; without it they are skipped with that reason.
   *
   * ```ts
   * seedToken: (workId, token) =>
   *   db.insertInto(table).values({ work_id: workId, fencing_token: String(token), released: 1 }).execute()
   * ```
   */
  seedToken?(workId: string, token: bigint): Promise<void>
  /**
   * Makes the round trip after `skipRoundTrips` more (default 0: the next one) fail before it reaches
   * the store, once, with the error the store's client throws for a broken connection (not a
   * `WorkleaseError`). The cases that check that a failure of the store is passed on as such, never
   * disguised as `FENCED` or another lease outcome, need it; without it they are skipped with that
   * reason. They pass `skipRoundTrips: 1` to fail the second round trip a refusal path may take (the
   * read that tells expired from fenced, a checkpoint's extending write); a harness that ignores it
   * fails the first instead, and those cases then check less, never wrongly. {@link RoundTripFailer}
   * keeps the count.
   *
   * ```ts
   * const failer = new RoundTripFailer()
   * // in the harness's command hook: if (failer.take()) throw new Error('ECONNRESET')
   * failNextCall: (skipRoundTrips) => failer.failNextCall(skipRoundTrips),
   * ```
   */
  failNextCall?(skipRoundTrips?: number): void
  /**
   * Round trips a successful acquire takes on this store when it is more than one by design, as on
   * MySQL, which has no `INSERT ... RETURNING` (the upsert, then a read of the expiry). Default: 1.
   */
  readonly acquireRoundTrips?: number
  /** Drops the storage and closes what `open` opened. */
  close(): Promise<void>
}

/** Makes a fresh harness for every test case. */
export type BackendFactory = () => BackendHarness | Promise<BackendHarness>
