import { type RawBuilder, sql } from 'kysely'
import type { DialectFamily } from './lease-dialect.js'
import { tokenSql } from './token-sql.js'

/** A row handed back by acquire: text columns, so 64-bit values never pass through a JS number. */
export interface AcquiredRow {
  token: string
  expires_at: string
  /** MySQL family only: `LAST_INSERT_ID()`, 0 when the lease was held. */
  acquired?: unknown
}

export interface LiveRow {
  live: unknown
}

export interface CheckpointRow {
  state: Uint8Array | null
  clean_handoff: unknown
}

/** The identity of a lease as a record names it; `token` is the decimal text of the bigint. */
export interface RecordKey {
  readonly workId: string
  readonly holderId: string
  readonly token: string
}

/**
 * Every statement the backend issues, for one SQL family and one table. Values are always parameters;
 * the only text spliced in is the validated table name and fixed fragments defined here.
 */
export class LeaseStatements {
  readonly family: DialectFamily
  readonly #table: RawBuilder<unknown>
  // The database server's clock in epoch milliseconds, so session time zones never enter.
  // PostgreSQL: clock_timestamp(), not now(), which is frozen at the start of the caller's transaction.
  // MySQL/MariaDB: NOW() and UTC_TIMESTAMP() follow the session variable `timestamp`, which a pooled
  // connection may carry (SET timestamp), so the clock is SYSDATE(6), which ignores it. SYSDATE is in the
  // session time_zone: subtracting that zone's offset (NOW - UTC_TIMESTAMP, read at one instant) gives
  // UTC without the DST-fold ambiguity of UNIX_TIMESTAMP(SYSDATE()). SYSDATE is read anew at every call,
  // so a statement that must agree with itself reads it once (see acquireMysql).
  // SQLite: julianday('now') works on every version, unlike unixepoch('subsec'), and is fixed per statement.
  readonly #now: RawBuilder<unknown>
  readonly #true: RawBuilder<unknown>
  readonly #false: RawBuilder<unknown>
  // SQLite's two-argument MAX()/MIN() are its scalar GREATEST/LEAST.
  readonly #greatest: string
  readonly #least: string

  constructor(family: DialectFamily, table: string) {
    this.family = family
    this.#table = sql.table(table)
    this.#now = sql.raw(
      family === 'postgres'
        ? 'floor(extract(epoch from clock_timestamp()) * 1000)::bigint'
        : family === 'mysql'
          ? "((TIMESTAMPDIFF(MICROSECOND, '1970-01-01 00:00:00', SYSDATE(6)) - TIMESTAMPDIFF(MICROSECOND, UTC_TIMESTAMP(6), NOW(6))) DIV 1000)"
          : "CAST(ROUND((julianday('now') - 2440587.5) * 86400000.0) AS INTEGER)",
    )
    this.#true = sql.raw(family === 'postgres' ? 'true' : '1')
    this.#false = sql.raw(family === 'postgres' ? 'false' : '0')
    this.#greatest = family === 'sqlite' ? 'MAX' : 'GREATEST'
    this.#least = family === 'sqlite' ? 'MIN' : 'LEAST'
  }

  #token(token: string): RawBuilder<unknown> {
    return tokenSql(this.family, token)
  }

  // MySQL/MariaDB: mysql2 escapes a string parameter and then encodes the whole query in the connection
  // charset, so with a single-byte one (latin1) U+4E27 arrives as a bare quote and distinct ids collide.
  // A Buffer goes out as a hex literal, ASCII in every charset, and matches the VARBINARY columns byte
  // for byte: the ids' UTF-8 bytes whatever the connection charset.
  #id(id: string): unknown {
    return this.family === 'mysql' ? Buffer.from(id, 'utf8') : id
  }

  #text(column: string): RawBuilder<unknown> {
    const type = this.family === 'postgres' ? 'text' : this.family === 'mysql' ? 'CHAR' : 'TEXT'
    return sql`CAST(${sql.ref(column)} AS ${sql.raw(type)})`
  }

  #valid(key: RecordKey): RawBuilder<unknown> {
    return sql`work_id = ${this.#id(key.workId)} AND token = ${this.#token(key.token)} AND holder = ${this.#id(key.holderId)} AND released = ${this.#false}`
  }

  /**
   * PostgreSQL and SQLite: a conditional upsert that returns a row only when it took the lease.
   * Both evaluate every SET expression against the old row, so `clean_handoff = released` reads the
   * previous lease's released mark.
   */
  acquireUpsert(workId: string, holderId: string, ttlMs: number): RawBuilder<AcquiredRow> {
    const now = this.#now
    return sql<AcquiredRow>`INSERT INTO ${this.#table} AS l (work_id, token, holder, expires_at, released, clean_handoff, checkpoint_seq)
VALUES (${workId}, 1, ${holderId}, ${now} + ${ttlMs}, ${this.#false}, ${this.#true}, 0)
ON CONFLICT (work_id) DO UPDATE SET token = l.token + 1, holder = excluded.holder, expires_at = excluded.expires_at, released = ${this.#false}, clean_handoff = l.released, checkpoint_seq = 0
WHERE l.released = ${this.#true} OR l.expires_at <= ${now}
RETURNING ${this.#text('token')} AS token, ${this.#text('expires_at')} AS expires_at`
  }

  /**
   * MySQL/MariaDB: `ON DUPLICATE KEY UPDATE` has no WHERE, so every assignment is an IF() on "free".
   * MySQL applies assignments left to right and later ones see earlier results, so the columns "free"
   * reads (released, expires_at) are assigned last, and clean_handoff reads released before it is
   * cleared. `released = 0` needs no condition: a lease that is not free is not released.
   * LAST_INSERT_ID(expr) reports the outcome in the same reply: the new token, or 0 when held.
   * With `returning`, MariaDB hands back the token, expiry and that flag as a row.
   *
   * "now" is read once, in a derived table every assignment refers to: SYSDATE() would otherwise be read
   * again in each IF(), and at the expiry boundary the token's IF could see the lease held and the
   * holder's see it free. LIMIT 1 keeps the optimizer from merging the derived table into the outer
   * query (which would copy the SYSDATE() call back into every reference); MySQL and MariaDB both
   * let ON DUPLICATE KEY UPDATE read the columns of an INSERT ... SELECT's source.
   */
  acquireMysql(workId: string, holderId: string, ttlMs: number, returning: boolean): RawBuilder<AcquiredRow> {
    const now = sql`wl_clock.wl_now`
    const free = sql`(released <> 0 OR expires_at <= ${now})`
    const work = this.#id(workId)
    const holder = this.#id(holderId)
    const insert = sql`INSERT INTO ${this.#table} (work_id, token, holder, expires_at, released, clean_handoff, checkpoint_seq)
SELECT ${work}, LAST_INSERT_ID(1), ${holder}, ${now} + ${ttlMs}, 0, 1, 0 FROM (SELECT ${this.#now} AS wl_now LIMIT 1) AS wl_clock
ON DUPLICATE KEY UPDATE
  token = IF(${free}, LAST_INSERT_ID(token + 1), token + LAST_INSERT_ID(0)),
  holder = IF(${free}, ${holder}, holder),
  clean_handoff = IF(${free}, released, clean_handoff),
  checkpoint_seq = IF(${free}, 0, checkpoint_seq),
  expires_at = IF(${free}, ${now} + ${ttlMs}, expires_at),
  released = 0`
    if (!returning) return insert as RawBuilder<AcquiredRow>
    return sql<AcquiredRow>`${insert}
RETURNING ${this.#text('token')} AS token, ${this.#text('expires_at')} AS expires_at, LAST_INSERT_ID() AS acquired`
  }

  /** MySQL without RETURNING: the expiry of the lease acquire just took (read-only, keyed by its token). */
  acquiredExpiry(workId: string, token: string): RawBuilder<{ expires_at: string | null; now_ms: string }> {
    return sql<{ expires_at: string | null; now_ms: string }>`SELECT
  (SELECT ${this.#text('expires_at')} FROM ${this.#table} WHERE work_id = ${this.#id(workId)} AND token = ${this.#token(token)}) AS expires_at,
  CAST(${this.#now} AS CHAR) AS now_ms`
  }

  // Renew and checkpoint only ever extend: a late-landing call or a shorter ttl keeps the later expiry.
  #extended(ttlMs: number): RawBuilder<unknown> {
    return sql`${sql.raw(this.#greatest)}(expires_at, ${this.#now} + ${ttlMs})`
  }

  renew(key: RecordKey, ttlMs: number): RawBuilder<unknown> {
    return sql`UPDATE ${this.#table} SET expires_at = ${this.#extended(ttlMs)}
WHERE ${this.#valid(key)} AND expires_at > ${this.#now}`
  }

  /**
   * Stores state and sequence only when the sequence is above the stored one, and extends the expiry
   * either way: one statement whatever the order checkpoints arrive in. MySQL assigns left to right, so
   * state is assigned while checkpoint_seq still holds the old value; the others read the old row anyway.
   */
  checkpoint(key: RecordKey, state: Uint8Array, ttlMs: number, sequence: number): RawBuilder<unknown> {
    const seq = this.#token(String(sequence))
    return sql`UPDATE ${this.#table} SET state = CASE WHEN checkpoint_seq < ${seq} THEN ${state} ELSE state END,
  checkpoint_seq = ${sql.raw(this.#greatest)}(checkpoint_seq, ${seq}), expires_at = ${this.#extended(ttlMs)}
WHERE ${this.#valid(key)}`
  }

  /** Marks released and moves expiry strictly before now (never later than it was). */
  release(key: RecordKey): RawBuilder<unknown> {
    return sql`UPDATE ${this.#table} SET released = ${this.#true}, expires_at = ${sql.raw(this.#least)}(expires_at, ${this.#now} - 1)
WHERE ${this.#valid(key)}`
  }

  readCheckpoint(key: RecordKey): RawBuilder<CheckpointRow> {
    return sql<CheckpointRow>`SELECT state, clean_handoff FROM ${this.#table} WHERE ${this.#valid(key)}`
  }

  /** The failure-path read: no row = the record is invalid; `live` says whether the lease is unexpired. */
  liveness(key: RecordKey): RawBuilder<LiveRow> {
    return sql<LiveRow>`SELECT CASE WHEN expires_at > ${this.#now} THEN 1 ELSE 0 END AS live
FROM ${this.#table} WHERE ${this.#valid(key)}`
  }
}
