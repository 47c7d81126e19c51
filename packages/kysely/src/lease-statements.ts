import { type LeaseRecord, MAX_FENCING_TOKEN, MAX_LIST_LIMIT } from '@worklease/spec'
import { type CompiledQuery, type RawBuilder, sql } from 'kysely'
import type { DialectFamily } from './lease-dialect.js'
import type { StatementCache } from './statement-cache.js'
import { tokenSql } from './token-sql.js'

/**
 * A row handed back by acquire: text columns, so 64-bit values never pass through a JS number.
 * PostgreSQL and SQLite: `acquired` is true with the new lease, or (PostgreSQL) false with the lease in
 * the way as a {@link HolderRow}. MySQL family: `acquired` is `LAST_INSERT_ID()`, the new token, 0 when
 * the lease was held (the row is then the holder's) or 2^64 - 1 when the tokens are exhausted.
 */
export interface AcquiredRow extends Partial<Omit<HolderRow, 'token' | 'expires_at'>> {
  token: string
  expires_at: string
  acquired: unknown
  /**
   * With the checkpoint asked for: the taken lease's state and handoff. Read only when `acquired` says
   * the lease was taken (a refused row carries no state; MariaDB's still carries the holder's handoff).
   */
  state?: Uint8Array | null
  clean_handoff?: unknown
}

/** The lease in the way of an acquire, with its time left on the server clock of the same statement. */
export interface HolderRow {
  token: string
  expires_at: string
  holder: unknown
  /** `expires_at - now`, possibly negative when read after the lease ended. */
  expires_in: string
  /** Free by the same "now": released or expired. Null where the statement only reports held leases. */
  free: unknown
}

// The contract's largest token, as SQL: acquire never increments past it (a store-side condition, so no
// integer overflow error and no record no store can keep).
const MAX_TOKEN = sql.raw(MAX_FENCING_TOKEN.toString())
// A list page's rows at most: MAX_LIST_LIMIT + 1 leases and the sentinel.
const MAX_LIST_ROWS = MAX_LIST_LIMIT + 2

/** What {@link LeaseStatements.acquiredRow} reads back. */
export interface AcquiredReadBack {
  expires_at: string | null
  now_ms: string
  state?: Uint8Array | null
  clean_handoff?: unknown
}

export interface LiveRow {
  live: unknown
}

/** A row of renewMany's failure-path read: a valid record's lease, and whether it is unexpired. */
export interface ValidRow {
  work_id: unknown
  token: string
  live: unknown
}

export interface CheckpointRow {
  state: Uint8Array | null
  clean_handoff: unknown
}

/** A row of a list page; the sentinel row (every lease column null) only carries the page's "now". */
export interface ListedRow {
  work_id: unknown
  holder: unknown
  token: string | null
  expires_at: string | null
  released: unknown
  free: unknown
  state_bytes: unknown
  now_ms: string
}

/** The identity of a lease as a record names it; `token` is the decimal text of the bigint. */
export interface RecordKey {
  readonly workId: string
  readonly holderId: string
  readonly token: string
}

/**
 * Every statement the backend issues, for one SQL family and one table. Values are always parameters;
 * the only text spliced in is the validated table name and fixed fragments defined here. Each statement
 * of a fixed shape is compiled once (see {@link StatementCache}): its template only places the values
 * it is handed, already encoded for the family.
 */
export class LeaseStatements {
  readonly family: DialectFamily
  readonly #table: RawBuilder<unknown>
  // The database server's clock in epoch milliseconds, so session time zones never enter.
  // PostgreSQL: clock_timestamp(), not now(), which is frozen at the start of the caller's transaction.
  // MySQL/MariaDB: NOW() and UTC_TIMESTAMP() follow the session variable `timestamp`, which a pooled
  // connection may carry (SET timestamp), so the clock is SYSDATE(6), which ignores it. SYSDATE is in the
  // session time_zone: subtracting that zone's offset (NOW - UTC_TIMESTAMP, read at one instant) gives
  // UTC without the DST-fold ambiguity of UNIX_TIMESTAMP(SYSDATE()). But that offset is the one at the
  // session's `timestamp`: left on the other side of a daylight-saving change, an hour off. So where NOW
  // is a minute or more from SYSDATE (a `timestamp` is set), UNIX_TIMESTAMP(SYSDATE(6)) converts it, at
  // the cost of its fold ambiguity (an hour a year) on such a connection only. SYSDATE is read anew at
  // every call, so a statement that must agree with itself reads it once (see acquireMysql).
  // SQLite: julianday('now') works on every version, unlike unixepoch('subsec'), and is fixed per statement.
  readonly #now: RawBuilder<unknown>
  readonly #true: RawBuilder<unknown>
  readonly #false: RawBuilder<unknown>
  // SQLite's two-argument MAX()/MIN() are its scalar GREATEST/LEAST.
  readonly #greatest: RawBuilder<unknown>
  readonly #least: RawBuilder<unknown>
  readonly #textType: RawBuilder<unknown>
  // Fragments several statements share, built once. (Renewing a batch still builds its statement per
  // call: its shape depends on the batch.)
  readonly #columnsAsText = new Map<string, RawBuilder<unknown>>()
  readonly #takeover: RawBuilder<unknown>
  // MySQL/MariaDB: InnoDB answers a plain SELECT inside a caller's REPEATABLE READ transaction (its
  // default) from the transaction's first snapshot, while an UPDATE matches the latest committed row.
  // The reads that name a refused write's outcome (fenced or expired? who holds it?) must see what the
  // write saw: a locking read does, and locks no more than the write before it already did (InnoDB
  // keeps the row it scanned locked). PostgreSQL reports such a conflict as a serialization failure;
  // SQLite has one writer.
  readonly #current: RawBuilder<unknown>
  readonly #cache: StatementCache

  constructor(family: DialectFamily, table: string, cache: StatementCache) {
    this.family = family
    this.#cache = cache
    this.#table = sql.table(table)
    this.#now = sql.raw(
      family === 'postgres'
        ? 'floor(extract(epoch from clock_timestamp()) * 1000)::bigint'
        : family === 'mysql'
          ? "(CASE WHEN ABS(TIMESTAMPDIFF(SECOND, NOW(6), SYSDATE(6))) < 60 THEN (TIMESTAMPDIFF(MICROSECOND, '1970-01-01 00:00:00', SYSDATE(6)) - TIMESTAMPDIFF(MICROSECOND, UTC_TIMESTAMP(6), NOW(6))) DIV 1000 ELSE CAST(FLOOR(UNIX_TIMESTAMP(SYSDATE(6)) * 1000) AS SIGNED) END)"
          : "CAST(ROUND((julianday('now') - 2440587.5) * 86400000.0) AS INTEGER)",
    )
    this.#true = sql.raw(family === 'postgres' ? 'true' : '1')
    this.#false = sql.raw(family === 'postgres' ? 'false' : '0')
    this.#greatest = sql.raw(family === 'sqlite' ? 'MAX' : 'GREATEST')
    this.#least = sql.raw(family === 'sqlite' ? 'MIN' : 'LEAST')
    this.#current = sql.raw(family === 'mysql' ? ' LOCK IN SHARE MODE' : '')
    this.#textType = sql.raw(family === 'postgres' ? 'text' : family === 'mysql' ? 'CHAR' : 'TEXT')
    this.#takeover = sql`ON CONFLICT (work_id) DO UPDATE SET token = l.token + 1, holder = excluded.holder, expires_at = excluded.expires_at, released = ${this.#false}, clean_handoff = l.released, checkpoint_seq = 0`
  }
  // MySQL/MariaDB: a session's sql_select_limit (a pooled connection may carry it, like SET timestamp)
  // cuts every top-level SELECT without a LIMIT of its own: a readCheckpoint of a valid lease would read
  // no row (FENCED), renewMany's read would miss valid leases, a listing would end early. So each
  // SELECT that answers states its own.
  #limit(rows: number): RawBuilder<unknown> {
    return sql.raw(this.family === 'mysql' ? ` LIMIT ${rows}` : '')
  }

  #token(token: unknown): RawBuilder<unknown> {
    return tokenSql(this.family, token)
  }

  // MySQL/MariaDB: mysql2 escapes a string parameter and then encodes the whole query in the connection
  // charset, so with a single-byte one (latin1) U+4E27 arrives as a bare quote and distinct ids collide.
  // A Buffer goes out as a hex literal, ASCII in every charset, and matches the VARBINARY columns byte
  // for byte: the ids' UTF-8 bytes whatever the connection charset.
  #id(id: string): unknown {
    return this.family === 'mysql' ? Buffer.from(id, 'utf8') : id
  }

  /** A record's workId, token and holderId, encoded, in the order {@link #valid} takes them. */
  #keyValues(key: RecordKey): unknown[] {
    return [this.#id(key.workId), key.token, this.#id(key.holderId)]
  }

  #text(column: string): RawBuilder<unknown> {
    let text = this.#columnsAsText.get(column)
    if (text === undefined) {
      text = this.#cast(sql.ref(column))
      this.#columnsAsText.set(column, text)
    }
    return text
  }

  #cast(value: RawBuilder<unknown> | ReturnType<typeof sql.ref>): RawBuilder<unknown> {
    return sql`CAST(${value} AS ${this.#textType})`
  }

  #valid(workId: unknown, token: unknown, holderId: unknown): RawBuilder<unknown> {
    return sql`work_id = ${workId} AND token = ${this.#token(token)} AND holder = ${holderId} AND released = ${this.#false}`
  }

  /**
   * PostgreSQL and SQLite: a conditional upsert that returns a row only when it took the lease.
   * Both evaluate every SET expression against the old row, so `clean_handoff = released` reads the
   * previous lease's released mark. A free lease at the largest token is left alone.
   *
   * PostgreSQL wraps it in a CTE whose second branch, when the upsert returned nothing, reports the lease
   * in the way, in the same statement. `FOR SHARE` reads that row's latest version (the one the upsert
   * locked and judged), not the statement's older snapshot; the clock CTE holds a volatile function, so
   * PostgreSQL evaluates it once for the whole statement. SQLite has no data-modifying CTEs: the backend
   * reads the holder with {@link holderOf} on that failure path.
   */
  acquireUpsert(
    workId: string,
    holderId: string,
    ttlMs: number,
    withCheckpoint: boolean,
  ): CompiledQuery<AcquiredRow> {
    return this.#cache.bind(`acquire:${withCheckpoint}`, [workId, holderId, ttlMs], (work, holder, ttl) =>
      this.#acquireUpsert(work, holder, ttl, withCheckpoint),
    )
  }

  #acquireUpsert(
    workId: unknown,
    holderId: unknown,
    ttlMs: unknown,
    withCheckpoint: boolean,
  ): RawBuilder<AcquiredRow> {
    const takeover = this.#takeover
    if (this.family === 'sqlite') {
      // julianday('now') is fixed for the whole statement in SQLite.
      const now = this.#now
      return sql<AcquiredRow>`INSERT INTO ${this.#table} AS l (work_id, token, holder, expires_at, released, clean_handoff, checkpoint_seq)
VALUES (${workId}, 1, ${holderId}, ${now} + ${ttlMs}, 0, 1, 0)
${takeover}
WHERE (l.released = 1 OR l.expires_at <= ${now}) AND l.token < ${MAX_TOKEN}
RETURNING 1 AS acquired, ${this.#text('token')} AS token, ${this.#text('expires_at')} AS expires_at${sql.raw(withCheckpoint ? ', state, clean_handoff' : '')}`
    }
    // The taken row's state and handoff, or nothing on the branch that names the holder: a refused
    // acquire never carries someone else's checkpoint over the wire.
    const [takenCheckpoint, heldCheckpoint] = withCheckpoint
      ? [
          sql.raw(', l.state, l.clean_handoff'),
          sql.raw(', NULL::bytea AS state, NULL::boolean AS clean_handoff'),
        ]
      : [sql.raw(''), sql.raw('')]
    const checkpointColumns = sql.raw(withCheckpoint ? ', state, clean_handoff' : '')
    return sql<AcquiredRow>`WITH wl_clock AS (SELECT ${this.#now} AS wl_now),
taken AS (
  INSERT INTO ${this.#table} AS l (work_id, token, holder, expires_at, released, clean_handoff, checkpoint_seq)
  SELECT ${workId}, 1, ${holderId}, wl_clock.wl_now + ${ttlMs}, false, true, 0 FROM wl_clock
  ${takeover}
  WHERE (l.released OR l.expires_at <= (SELECT wl_now FROM wl_clock)) AND l.token < ${MAX_TOKEN}
  RETURNING l.token, l.expires_at${takenCheckpoint}
),
held AS (
  SELECT l.token, l.holder, l.expires_at, l.released OR l.expires_at <= wl_clock.wl_now AS free,
    l.expires_at - wl_clock.wl_now AS expires_in
  FROM ${this.#table} AS l, wl_clock
  WHERE l.work_id = ${workId} AND NOT EXISTS (SELECT FROM taken)
  FOR SHARE OF l
)
SELECT true AS acquired, token::text AS token, expires_at::text AS expires_at, NULL::text AS holder,
  NULL::boolean AS free, NULL::text AS expires_in${checkpointColumns} FROM taken
UNION ALL
SELECT false, token::text, expires_at::text, holder, free, expires_in::text${heldCheckpoint} FROM held`
  }

  /**
   * The lease of a workId as acquire's failure path reports it, "now" read once: for SQLite and MySQL 8,
   * whose acquire cannot return the row it left alone.
   */
  holderOf(workId: string): CompiledQuery<HolderRow> {
    return this.#cache.bind('holderOf', [this.#id(workId)], (work) => this.#holderOf(work))
  }

  #holderOf(workId: unknown): RawBuilder<HolderRow> {
    const released = this.family === 'postgres' ? sql`released` : sql`released <> 0`
    return sql<HolderRow>`SELECT ${this.#text('token')} AS token, holder, ${this.#text('expires_at')} AS expires_at,
  CASE WHEN ${released} OR expires_at <= wl_clock.wl_now THEN 1 ELSE 0 END AS free,
  ${this.#cast(sql`expires_at - wl_clock.wl_now`)} AS expires_in
FROM ${this.#table}, (SELECT ${this.#now} AS wl_now LIMIT 1) AS wl_clock WHERE work_id = ${workId}${this.#limit(1)}${this.#current}`
  }

  /**
   * MySQL/MariaDB: `ON DUPLICATE KEY UPDATE` has no WHERE, so every assignment is an IF() on "take"
   * (free, and below the largest token). MySQL applies assignments left to right and later ones see
   * earlier results, so holder, clean_handoff and checkpoint_seq, which read the old row, come before
   * token, and the columns "free" reads (released, expires_at) come last. Those two cannot re-evaluate
   * "take" once the token moved (MAX - 1 taken looks like MAX left alone), so they read
   * `LAST_INSERT_ID()` alone, never the token column (which MariaDB's SIMULTANEOUS_ASSIGNMENT mode
   * shows as it was before the statement): within one statement it returns what LAST_INSERT_ID(expr)
   * last set, which is the new token on a takeover (1..MAX: taken), 0 when held and -1 (read back as
   * 2^64 - 1) when the lease is free but its tokens are exhausted. The reply carries that value either way: as
   * the OK packet's insert id, and with `returning` (MariaDB) as `acquired` next to the row, which is the
   * lease in the way when nothing was taken.
   *
   * "now" is read once, in a derived table every assignment refers to: SYSDATE() would otherwise be read
   * again in each IF(), and at the expiry boundary the token's IF could see the lease held and the
   * holder's see it free. LIMIT 1 keeps the optimizer from merging the derived table into the outer
   * query (which would copy the SYSDATE() call back into every reference); MySQL and MariaDB both
   * let ON DUPLICATE KEY UPDATE read the columns of an INSERT ... SELECT's source. RETURNING cannot see
   * the derived table, so `expires_in` reads the clock again, a little later: never more time than left.
   */
  acquireMysql(
    workId: string,
    holderId: string,
    ttlMs: number,
    returning: boolean,
    withCheckpoint: boolean,
  ): CompiledQuery<AcquiredRow> {
    return this.#cache.bind(
      `acquireMysql:${returning}:${withCheckpoint}`,
      [this.#id(workId), this.#id(holderId), ttlMs],
      (work, holder, ttl) => this.#acquireMysql(work, holder, ttl, returning, withCheckpoint),
    )
  }

  #acquireMysql(
    work: unknown,
    holder: unknown,
    ttlMs: unknown,
    returning: boolean,
    withCheckpoint: boolean,
  ): RawBuilder<AcquiredRow> {
    const now = sql`wl_clock.wl_now`
    const free = sql`(released <> 0 OR expires_at <= ${now})`
    const take = sql`(${free} AND token < ${MAX_TOKEN})`
    // Decided once, by the token's assignment, and read from LAST_INSERT_ID() alone: no later
    // assignment reads the token column, which MariaDB's SIMULTANEOUS_ASSIGNMENT mode shows as it was
    // before the statement (taken: the new token, 1..MAX; held: 0; exhausted: -1, read as 2^64 - 1).
    const took = sql`LAST_INSERT_ID() BETWEEN 1 AND ${MAX_TOKEN}`
    const insert = sql`INSERT INTO ${this.#table} (work_id, token, holder, expires_at, released, clean_handoff, checkpoint_seq)
SELECT ${work}, LAST_INSERT_ID(1), ${holder}, ${now} + ${ttlMs}, 0, 1, 0 FROM (SELECT ${this.#now} AS wl_now LIMIT 1) AS wl_clock
ON DUPLICATE KEY UPDATE
  holder = IF(${take}, ${holder}, holder),
  clean_handoff = IF(${take}, released, clean_handoff),
  checkpoint_seq = IF(${take}, 0, checkpoint_seq),
  token = IF(${take}, LAST_INSERT_ID(token + 1), token + (LAST_INSERT_ID(IF(${free}, -1, 0)) & 0)),
  expires_at = IF(${took}, ${now} + ${ttlMs}, expires_at),
  released = IF(${took}, 0, released)`
    if (!returning) return insert as RawBuilder<AcquiredRow>
    // RETURNING hands back the row either way: the state only of the row this statement took.
    const checkpoint = withCheckpoint
      ? sql`,
  CASE WHEN ${took} THEN state END AS state, clean_handoff`
      : sql``
    return sql<AcquiredRow>`${insert}
RETURNING ${this.#text('token')} AS token, ${this.#text('expires_at')} AS expires_at, holder,
  CAST(LAST_INSERT_ID() AS CHAR) AS acquired, ${this.#cast(sql`expires_at - ${this.#now}`)} AS expires_in${checkpoint}`
  }

  /**
   * MySQL without RETURNING: the expiry of the lease acquire just took (read-only, keyed by its token),
   * and with `withCheckpoint` its state and handoff; every lease column is null once the token moved on.
   */
  acquiredRow(workId: string, token: string, withCheckpoint: boolean): CompiledQuery<AcquiredReadBack> {
    return this.#cache.bind(`acquiredRow:${withCheckpoint}`, [this.#id(workId), token], (work, taken) =>
      this.#acquiredRow(work, taken, withCheckpoint),
    )
  }

  #acquiredRow(workId: unknown, token: unknown, withCheckpoint: boolean): RawBuilder<AcquiredReadBack> {
    const checkpoint = sql.raw(withCheckpoint ? ', l.state, l.clean_handoff' : '')
    return sql<AcquiredReadBack>`SELECT ${this.#text('l.expires_at')} AS expires_at${checkpoint}, CAST(wl_clock.wl_now AS CHAR) AS now_ms
FROM (SELECT ${this.#now} AS wl_now LIMIT 1) AS wl_clock
LEFT JOIN ${this.#table} AS l ON l.work_id = ${workId} AND l.token = ${this.#token(token)}${this.#limit(1)}`
  }

  // Renew and checkpoint only ever extend: a late-landing call or a shorter ttl keeps the later expiry.
  #extended(ttlMs: unknown): RawBuilder<unknown> {
    return sql`${this.#greatest}(expires_at, ${this.#now} + ${ttlMs})`
  }

  renew(key: RecordKey, ttlMs: number): CompiledQuery<unknown> {
    return this.#cache.bind(
      'renew',
      [...this.#keyValues(key), ttlMs],
      (workId, token, holderId, ttl) => sql`UPDATE ${this.#table} SET expires_at = ${this.#extended(ttl)}
WHERE ${this.#valid(workId, token, holderId)} AND expires_at > ${this.#now}`,
    )
  }

  /**
   * Renews the valid, unexpired leases among `records` (one holder's), each by the max rule, in one
   * statement; the backend compares the affected-row count with the batch. No family returns the
   * renewed workIds: at 1,000 a statement, reading them back cost more client CPU than the rest of
   * the renewal, for a list needed only when some were refused (rare).
   *
   * PostgreSQL takes the ids and the tokens as two array literals, written here rather than by pg
   * (which escapes each element in JavaScript, a tenth of a batched renewal's client CPU; see
   * {@link idsArrayLiteral}), and joins the pairs to the table: a primary-key lookup a pair, or, where
   * the planner finds it cheaper, a hash join over a sequential scan (1,000 ids against 100,000 rows
   * on PostgreSQL 18: about 60 ms a statement, against 8-15 ms for the lookups). Arrays, not JSON: walked by `json_array_elements_text`, JSON parameters made a Leaser
   * seeding 30,000 leases on PostgreSQL 18 see 13,631 renewMany calls time out (none with arrays),
   * and a full bench lose 12,100 of 100,000 leases there. The planner estimates that function at 100
   * rows whatever the batch, where it knows an array constant's length, so the plans differ with the
   * table's size and statistics; which plan failed under that load was not pinned down.
   * Adding `work_id = ANY(ids)` made it plan a bitmap scan joined back to the pairs by a nested loop
   * that re-read the 1,000 pairs for every row: 999,000 comparisons, 2 s a statement on a busy
   * machine. The others list the pairs, with the workIds alone first so that MySQL ranges over the
   * primary key.
   */
  renewMany(holderId: string, records: readonly LeaseRecord[], ttlMs: number): CompiledQuery<unknown> {
    return this.#cache.compile(this.#renewMany(holderId, records, ttlMs))
  }

  #renewMany(holderId: string, records: readonly LeaseRecord[], ttlMs: number): RawBuilder<unknown> {
    const set = sql`SET expires_at = ${this.#extended(ttlMs)}`
    const live = sql`holder = ${this.#id(holderId)} AND released = ${this.#false} AND expires_at > ${this.#now}`
    if (this.family === 'postgres') {
      return sql`UPDATE ${this.#table} AS l ${set}
FROM unnest(CAST(${idsArrayLiteral(records)} AS text[]), CAST(${tokensArrayLiteral(records)} AS bigint[])) AS v(work_id, token)
WHERE l.work_id = v.work_id AND l.token = v.token AND l.${live}`
    }
    return sql`UPDATE ${this.#table} ${set}
WHERE ${live} AND ${this.#pairs(records)}`
  }

  /**
   * renewMany's failure path: the leases among `records` that are still valid (this holder, this
   * token, not released), and whether each is unexpired. A record missing from the answer is fenced.
   */
  validAmong(holderId: string, records: readonly LeaseRecord[]): CompiledQuery<ValidRow> {
    return this.#cache.compile(this.#validAmong(holderId, records))
  }

  #validAmong(holderId: string, records: readonly LeaseRecord[]): RawBuilder<ValidRow> {
    const live = sql`CASE WHEN expires_at > ${this.#now} THEN 1 ELSE 0 END AS live`
    const valid = sql`holder = ${this.#id(holderId)} AND released = ${this.#false}`
    if (this.family === 'postgres') {
      return sql<ValidRow>`SELECT work_id, token::text AS token, ${live} FROM ${this.#table}
WHERE work_id = ANY(CAST(${idsArrayLiteral(records)} AS text[])) AND ${valid}`
    }
    return sql<ValidRow>`SELECT work_id, ${this.#text('token')} AS token, ${live} FROM ${this.#table}
WHERE ${valid} AND ${this.#pairs(records)}${this.#limit(records.length)}${this.#current}`
  }

  // MySQL/SQLite: `work_id IN (...)` lets MySQL range over the primary key; the (work_id, token) pairs
  // then hold each row to its own token. SQLite only takes a list of row values from VALUES.
  #pairs(records: readonly LeaseRecord[]): RawBuilder<unknown> {
    const ids = sql.join(records.map((record) => sql`${this.#id(record.workId)}`))
    const pairs = sql.join(
      records.map(
        (record) => sql`(${this.#id(record.workId)}, ${this.#token(record.fencingToken.toString())})`,
      ),
    )
    return this.family === 'sqlite'
      ? sql`work_id IN (${ids}) AND (work_id, token) IN (VALUES ${pairs})`
      : sql`work_id IN (${ids}) AND (work_id, token) IN (${pairs})`
  }

  /**
   * Stores state and sequence only when the sequence is above the stored one, and extends the expiry
   * either way: one statement whatever the order checkpoints arrive in. MySQL assigns left to right, so
   * state is assigned while checkpoint_seq still holds the old value; the others read the old row anyway.
   */
  checkpoint(key: RecordKey, state: Uint8Array, ttlMs: number, sequence: number): CompiledQuery<unknown> {
    return this.#cache.bind(
      'checkpoint',
      [...this.#keyValues(key), state, String(sequence), ttlMs],
      (workId, token, holderId, bytes, sequenceText, ttl) => {
        const seq = this.#token(sequenceText)
        return sql`UPDATE ${this.#table} SET state = CASE WHEN checkpoint_seq < ${seq} THEN ${bytes} ELSE state END,
  checkpoint_seq = ${this.#greatest}(checkpoint_seq, ${seq}), expires_at = ${this.#extended(ttl)}
WHERE ${this.#valid(workId, token, holderId)}`
      },
    )
  }

  /** Marks released and moves expiry strictly before now (never later than it was). */
  release(key: RecordKey): CompiledQuery<unknown> {
    return this.#cache.bind(
      'release',
      this.#keyValues(key),
      (
        workId,
        token,
        holderId,
      ) => sql`UPDATE ${this.#table} SET released = ${this.#true}, expires_at = ${this.#least}(expires_at, ${this.#now} - 1)
WHERE ${this.#valid(workId, token, holderId)}`,
    )
  }

  readCheckpoint(key: RecordKey): CompiledQuery<CheckpointRow> {
    return this.#cache.bind(
      'readCheckpoint',
      this.#keyValues(key),
      (workId, token, holderId) =>
        sql<CheckpointRow>`SELECT state, clean_handoff FROM ${this.#table} WHERE ${this.#valid(workId, token, holderId)}${this.#limit(1)}`,
    )
  }

  /** The failure-path read: no row = the record is invalid; `live` says whether the lease is unexpired. */
  liveness(key: RecordKey): CompiledQuery<LiveRow> {
    return this.#cache.bind(
      'liveness',
      this.#keyValues(key),
      (
        workId,
        token,
        holderId,
      ) => sql<LiveRow>`SELECT CASE WHEN expires_at > ${this.#now} THEN 1 ELSE 0 END AS live
FROM ${this.#table} WHERE ${this.#valid(workId, token, holderId)}${this.#limit(1)}${this.#current}`,
    )
  }

  /**
   * One page of a listing: the leases in `[lower, upper)` after `cursor`, by the primary key, with the
   * state's size (never its bytes) and "free" judged by one "now", plus a sentinel row that carries that
   * "now" even when the page is empty. The caller sorts the rows: UNION ALL promises no order.
   */
  list(range: { lower: string; upper?: string; cursor?: string; limit: number }): CompiledQuery<ListedRow> {
    const { lower, upper, cursor, limit } = range
    const values: unknown[] = [limit, this.#id(lower)]
    if (upper !== undefined) values.push(this.#id(upper))
    if (cursor !== undefined) values.push(this.#id(cursor))
    return this.#cache.bind(
      `list:${upper !== undefined}:${cursor !== undefined}`,
      values,
      (limitValue, lowerValue, ...bounds) =>
        this.#list(
          limitValue,
          lowerValue,
          upper === undefined ? undefined : bounds[0],
          cursor === undefined ? undefined : bounds.at(-1),
        ),
    )
  }

  #list(limit: unknown, lower: unknown, upper: unknown, cursor: unknown): RawBuilder<ListedRow> {
    const conditions = [sql`l.work_id >= ${lower}`]
    if (upper !== undefined) conditions.push(sql`l.work_id < ${upper}`)
    if (cursor !== undefined) conditions.push(sql`l.work_id > ${cursor}`)
    const where = sql.join(conditions, sql` AND `)
    const released = this.family === 'postgres' ? sql`l.released` : sql`l.released <> 0`
    const size = sql.raw(this.family === 'postgres' ? 'octet_length(l.state)' : 'length(l.state)')
    const now = this.#cast(sql`wl_clock.wl_now`)
    // MySQL and MariaDB may inline a CTE (and with it SYSDATE, read per reference); a derived table with
    // LIMIT is read once, as in acquireMysql.
    const clock = sql`(SELECT ${this.#now} AS wl_now LIMIT 1) AS wl_clock`
    return sql<ListedRow>`SELECT * FROM (
  SELECT l.work_id, l.holder, ${this.#text('l.token')} AS token, ${this.#text('l.expires_at')} AS expires_at,
    CASE WHEN ${released} THEN 1 ELSE 0 END AS released,
    CASE WHEN ${released} OR l.expires_at <= wl_clock.wl_now THEN 1 ELSE 0 END AS free,
    ${size} AS state_bytes, ${now} AS now_ms
  FROM ${this.#table} AS l, ${clock}
  WHERE ${where}
  ORDER BY l.work_id
  LIMIT ${limit}
) AS wl_page
UNION ALL
SELECT NULL, NULL, NULL, NULL, NULL, NULL, NULL, ${now} FROM ${clock}${this.#limit(MAX_LIST_ROWS)}`
  }

  /**
   * Ends a live lease from outside: no holder (no valid holderId is empty, so no record matches it
   * again) and expired just now; not released, so the next holder sees an unclean handoff. With
   * `token`, only the lease stored at that token: the comparison is a predicate of the same UPDATE,
   * so a takeover can never land between the check and the write. (With or without it is a
   * different text, so a different cached shape.)
   */
  revoke(workId: string, token?: string): CompiledQuery<unknown> {
    if (token === undefined) {
      return this.#cache.bind(
        'revoke',
        [this.#id(''), this.#id(workId)],
        (nobody, work) => sql`UPDATE ${this.#table} SET holder = ${nobody}, expires_at = ${this.#now} - 1
WHERE work_id = ${work} AND released = ${this.#false} AND expires_at > ${this.#now}`,
      )
    }
    return this.#cache.bind(
      'revoke:token',
      [this.#id(''), this.#id(workId), token],
      (
        nobody,
        work,
        expected,
      ) => sql`UPDATE ${this.#table} SET holder = ${nobody}, expires_at = ${this.#now} - 1
WHERE work_id = ${work} AND token = ${this.#token(expected)} AND released = ${this.#false} AND expires_at > ${this.#now}`,
    )
  }
}

// An escape JSON.stringify writes for a control character: an odd run of backslashes, then b, f, n,
// r, t or u. (An even run is escaped backslashes followed by a plain letter.)
const JSON_CONTROL_ESCAPE = /(?:^|[^\\])(?:\\\\)*\\[bfnrtu]/

/**
 * The workIds as a PostgreSQL array literal (`{"a","b\\"c"}`). Both JSON and the array syntax quote
 * a string with `"` and escape only `"` and `\\` inside it, so JSON.stringify (native) writes the
 * literal whenever no id holds a control character, which JSON alone would write as `\\n` and the
 * like; then each id is quoted here. No id holds U+0000 or a lone surrogate (validateId).
 */
function idsArrayLiteral(records: readonly LeaseRecord[]): string {
  const ids = records.map((record) => record.workId)
  const json = JSON.stringify(ids)
  if (!JSON_CONTROL_ESCAPE.test(json)) return `{${json.slice(1, -1)}}`
  return `{${ids.map((id) => `"${id.replace(/["\\]/g, '\\$&')}"`).join(',')}}`
}

// A bigint's join() text is its decimal text, which the array syntax takes unquoted.
const tokensArrayLiteral = (records: readonly LeaseRecord[]): string =>
  `{${records.map((record) => record.fencingToken).join(',')}}`
