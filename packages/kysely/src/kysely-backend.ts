import {
  type AcquireArgs,
  type AcquiredWithCheckpoint,
  type Backend,
  type BackendCapabilities,
  type CallOptions,
  type CheckpointOptions,
  type CheckpointRead,
  compareWorkIds,
  createLeaseRecord,
  FencedError,
  InvalidArgumentError,
  LeaseExpiredError,
  LeaseHeldError,
  type LeaseListing,
  type LeasePage,
  type LeaseRecord,
  type ListOptions,
  leaseHeldBy,
  MAX_FENCING_TOKEN,
  type RenewOutcome,
  type RevokeOptions,
  raceAbort,
  readOnce,
  TokensExhaustedError,
  validateAcquireArgs,
  validateCheckpointArgs,
  validateListArgs,
  validateRecordArgs,
  validateRenewArgs,
  validateRenewManyArgs,
  validateRevokeArgs,
} from '@worklease/spec'
import type { CompiledQuery, Kysely, QueryResult } from 'kysely'
import { checkKysely } from './kysely-instance.js'
import {
  type DialectFamily,
  detectFamily,
  LEASE_DIALECTS,
  type LeaseDialect,
  type ResolvedDialect,
  resolveDialect,
} from './lease-dialect.js'
import {
  type AcquiredRow,
  type CheckpointRow,
  type HolderRow,
  LeaseStatements,
  type ListedRow,
  type RecordKey,
} from './lease-statements.js'
import { prefixUpperBound } from './prefix-range.js'
import { StatementCache } from './statement-cache.js'
import { DEFAULT_TABLE, validateTableName } from './table-name.js'

/** Options of {@link KyselyBackend}. */
export interface KyselyBackendOptions {
  /**
   * Your Kysely instance (any database type; the backend only issues raw SQL). Not a transaction, unless
   * you pass `allowTransaction` (see there). Its plugins (`CamelCasePlugin`, `withSchema`, ...) are
   * bypassed: name the schema in `table` instead.
   *
   * ```ts
   * const db = new Kysely<any>({ dialect: new PostgresDialect({ pool: new pg.Pool({ connectionString }) }) })
   * const backend = new KyselyBackend({ db })
   * ```
   */
  db: Kysely<any>
  /**
   * The lease table, as created by {@link createLeaseTable}: letters, digits and underscores, optionally
   * `schema.table`. Default: `'worklease_leases'`.
   *
   * ```ts
   * const backend = new KyselyBackend({ db, table: 'jobs.leases' })
   * ```
   */
  table?: string
  /**
   * The SQL flavour. Default: detected from Kysely's dialect adapter. A MySQL adapter cannot tell MySQL
   * from MariaDB, so the first acquire then tries MariaDB's `INSERT ... RETURNING` and, if the server
   * rejects the syntax (MySQL 8), settles on the MySQL form for the backend's lifetime.
   *
   * ```ts
   * const backend = new KyselyBackend({ db, dialect: 'mariadb' })
   * ```
   */
  dialect?: LeaseDialect
  /**
   * Largest checkpoint state in bytes. Default: 16 MiB on PostgreSQL and SQLite, 4 MiB on
   * MySQL/MariaDB (the state travels hex-encoded and must fit `max_allowed_packet`, 16 MiB by default).
   *
   * ```ts
   * const backend = new KyselyBackend({ db, maxStateBytes: 256 * 1024 })
   * ```
   */
  maxStateBytes?: number
  /**
   * Accept a transaction (`db.isTransaction`) as `db`. Default: `false`, and the constructor throws
   * `INVALID_ARGUMENT`. Every lease operation then joins your transaction, so no other process sees a
   * lease until it commits, and **a rollback undoes the acquires in it: their fencing tokens are handed
   * out again** to the next holders, while the rolled-back holder may already have used its token
   * (a fenced write elsewhere, a message). A rollback also undoes releases, renewals and checkpoints.
   * Only pass `true` when the transaction only commits, or nothing outside it ever saw the tokens.
   * Writes judge the latest committed row whatever the isolation level; under REPEATABLE READ (MySQL's
   * and MariaDB's default) `readCheckpoint` answers from the transaction's snapshot, so a lease revoked
   * since then shows up at the next write (`FENCED`), not at that read. PostgreSQL at REPEATABLE READ
   * or above reports such a conflict as a serialization failure (a store error): retry the transaction.
   *
   * ```ts
   * await db.transaction().execute(async (trx) => {
   *   // Tokens taken here are taken again by others if this transaction rolls back.
   *   const backend = new KyselyBackend({ db: trx, allowTransaction: true })
   *   await backend.acquire('setup', 'migrator', 30_000)
   * })
   * ```
   */
  allowTransaction?: boolean
}

/**
 * The most records one renewMany statement takes: 2,001 parameters on MySQL/MariaDB and SQLite (within
 * SQLite's 32,766 and MySQL's 65,535), two arrays on PostgreSQL; large enough that 100,000 leases take
 * 100 statements per renew interval, small enough that one statement stays short.
 */
const RENEW_MANY_MAX_RECORDS = 1_000
const MiB = 1024 * 1024
const DEFAULT_MAX_STATE_BYTES: Record<DialectFamily, number> = {
  postgres: 16 * MiB,
  sqlite: 16 * MiB,
  mysql: 4 * MiB,
}
// MySQL 8's answer to MariaDB's INSERT ... RETURNING: a syntax error, raised before anything runs.
const ER_PARSE_ERROR = 1064
// Statements a PostgreSQL serialization failure (40001) or deadlock (40P01) rolled back, sent again.
const SERIALIZATION_RETRIES = 20

/**
 * A worklease backend over PostgreSQL, MySQL/MariaDB or SQLite, through a Kysely instance you own.
 * Expiry is decided on the database server's clock, in epoch milliseconds. Every operation is one SQL
 * statement on its happy path (acquire on MySQL 8: two, see the README).
 *
 * ```ts
 * import { Kysely, PostgresDialect } from 'kysely'
 * import pg from 'pg'
 * import { createLeaseTable, KyselyBackend } from '@worklease/kysely'
 *
 * const db = new Kysely<any>({ dialect: new PostgresDialect({ pool: new pg.Pool({ connectionString }) }) })
 * await createLeaseTable(db)
 * const backend = new KyselyBackend({ db })
 * const record = await backend.acquire('invoice-42', 'worker-a', 30_000)
 * ```
 */
export class KyselyBackend implements Backend {
  readonly capabilities: BackendCapabilities
  readonly #db: Kysely<any>
  readonly #statements: LeaseStatements
  #dialect: ResolvedDialect
  /** Settles when the acquire probing for RETURNING ends, whatever its outcome; unset when none is. */
  #probing: Promise<void> | undefined
  /**
   * PostgreSQL outside a caller's transaction: each statement is its own transaction, and a session
   * whose default_transaction_isolation is REPEATABLE READ or SERIALIZABLE fails one that meets a
   * concurrent write with 40001, rolled back whole: sent again, it judges the latest row.
   */
  readonly #retrySerialization: boolean

  constructor(options: KyselyBackendOptions) {
    if (typeof options !== 'object' || options === null)
      throw new InvalidArgumentError('options must be an object')
    const {
      db,
      table = DEFAULT_TABLE,
      dialect,
      maxStateBytes,
      allowTransaction = false,
    } = readOnce(
      options,
      ['db', 'table', 'dialect', 'maxStateBytes', 'allowTransaction'],
      'options',
    ) as KyselyBackendOptions
    checkKysely('options.db', db)
    const { isTransaction: inTransaction } = readOnce(db, ['isTransaction'], 'options.db')
    if (typeof allowTransaction !== 'boolean') {
      throw new InvalidArgumentError('options.allowTransaction must be a boolean')
    }
    if (inTransaction && !allowTransaction) {
      throw new InvalidArgumentError(
        'options.db is a transaction: a rollback would undo its acquires and hand their fencing tokens out again, ' +
          'and no other process sees its leases before it commits; pass the root Kysely instance ' +
          '(or allowTransaction: true if the transaction can never roll back after a token was used)',
      )
    }
    validateTableName(table)
    if (dialect !== undefined && !LEASE_DIALECTS.includes(dialect)) {
      throw new InvalidArgumentError(`options.dialect must be one of ${LEASE_DIALECTS.join(', ')}`)
    }
    if (dialect !== undefined) {
      this.#dialect = resolveDialect(dialect)
    } else {
      const family = detectFamily(db)
      if (!family) {
        throw new InvalidArgumentError(
          `cannot tell the SQL flavour of this Kysely dialect; pass options.dialect (${LEASE_DIALECTS.join(', ')})`,
        )
      }
      this.#dialect = { family, returning: family === 'mysql' ? undefined : true }
    }
    if (maxStateBytes !== undefined && (!Number.isSafeInteger(maxStateBytes) || maxStateBytes < 0)) {
      throw new InvalidArgumentError('options.maxStateBytes must be a non-negative safe integer')
    }
    this.#retrySerialization = this.#dialect.family === 'postgres' && !inTransaction
    // Plugins such as CamelCasePlugin would rename the columns these raw statements read back.
    this.#db = db.withoutPlugins()
    this.#statements = new LeaseStatements(
      this.#dialect.family,
      table,
      new StatementCache((query) => query.compile(this.#db)),
    )
    this.capabilities = Object.freeze({
      clock: 'server',
      maxStateBytes: maxStateBytes ?? DEFAULT_MAX_STATE_BYTES[this.#dialect.family],
      crossConnectionAtomic: true,
      reportsHolder: true,
      acquireWithCheckpoint: true,
      list: true,
      revoke: true,
      renewMany: Object.freeze({ maxRecords: RENEW_MANY_MAX_RECORDS }),
    })
  }

  /** The SQL family in use: `'postgres'`, `'mysql'` (MySQL and MariaDB) or `'sqlite'`. */
  get family(): DialectFamily {
    return this.#dialect.family
  }

  async acquire(
    workId: string,
    holderId: string,
    ttlMs: number,
    options?: CallOptions,
  ): Promise<LeaseRecord> {
    // Only the validated snapshot from here on: the caller's objects are never read again.
    return (await this.#take(validateAcquireArgs(workId, holderId, ttlMs, options), false)).record
  }

  /** {@link acquire}, with the taken row's state and handoff in the same statement. */
  async acquireWithCheckpoint(
    workId: string,
    holderId: string,
    ttlMs: number,
    options?: CallOptions,
  ): Promise<AcquiredWithCheckpoint> {
    const { record, row } = await this.#take(validateAcquireArgs(workId, holderId, ttlMs, options), true)
    return { record, checkpoint: checkpointRead(row) }
  }

  async #take(args: AcquireArgs, withCheckpoint: boolean): Promise<Taken> {
    const { workId, holderId, ttlMs, signal } = args
    if (this.#dialect.family !== 'mysql') {
      const statement = this.#statements.acquireUpsert(workId, holderId, ttlMs, withCheckpoint)
      const { rows } = await this.#run(statement, signal)
      const row = rows[0]
      if (row && isTrue(row.acquired))
        return {
          record: createLeaseRecord(workId, holderId, BigInt(row.token), toMillis(row.expires_at)),
          row,
        }
      // PostgreSQL reported the lease in the way in the same statement. SQLite cannot, and PostgreSQL
      // cannot see a row another transaction inserted after its snapshot: one read, on this path only.
      throw refusal(
        (row as HolderRow | undefined) ??
          (await this.#run(this.#statements.holderOf(workId), signal)).rows[0],
      )
    }
    if (this.#dialect.returning === undefined) {
      // Single flight: a second probe in flight would get its parse error after the first had already
      // switched to MySQL, and be rethrown. Later callers wait for the verdict, then start over.
      if (this.#probing) {
        await raceAbort(this.#probing, signal)
        return this.#take(args, withCheckpoint)
      }
      let settle!: () => void
      this.#probing = new Promise<void>((resolve) => {
        settle = resolve
      })
      try {
        return await this.#acquireMysqlFamily(args, withCheckpoint)
      } finally {
        this.#probing = undefined
        settle()
      }
    }
    return this.#acquireMysqlFamily(args, withCheckpoint)
  }

  async #acquireMysqlFamily(args: AcquireArgs, withCheckpoint: boolean): Promise<Taken> {
    const { workId, holderId, ttlMs, signal } = args
    if (this.#dialect.returning !== false) {
      let result: QueryResult<AcquiredRow> | undefined
      try {
        result = await this.#run(
          this.#statements.acquireMysql(workId, holderId, ttlMs, true, withCheckpoint),
          signal,
        )
      } catch (error) {
        // Only an undecided dialect probes; a parse error never executed anything, so nothing is retried.
        // Already switched to MySQL: a probe sent before the verdict (its caller's wait was aborted).
        if (this.#dialect.returning === true || (error as { errno?: unknown }).errno !== ER_PARSE_ERROR) {
          throw error
        }
        this.#dialect = { family: 'mysql', returning: false }
      }
      if (result) {
        this.#dialect = { family: 'mysql', returning: true }
        const row = result.rows[0]
        if (!row) throw new Error('INSERT ... RETURNING returned no row')
        const acquired = BigInt(String(row.acquired))
        if (acquired > MAX_FENCING_TOKEN) throw new TokensExhaustedError()
        // 0: the lease was held, and the row is the holder's, untouched.
        if (acquired === 0n) throw refusal({ ...row, free: 0 } as HolderRow)
        return {
          record: createLeaseRecord(workId, holderId, BigInt(row.token), toMillis(row.expires_at)),
          row,
        }
      }
    }
    return this.#acquireWithoutReturning(args, withCheckpoint)
  }

  // MySQL 8 reports the token through LAST_INSERT_ID in the OK packet, but nothing carries the server's
  // expiry (or the state) back, so a second, read-only statement fetches them, keyed by the new token.
  // Only the lease's own holder could change that row before it expires, and the holder does not have
  // the record yet.
  async #acquireWithoutReturning(args: AcquireArgs, withCheckpoint: boolean): Promise<Taken> {
    const { workId, holderId, ttlMs, signal } = args
    const { insertId } = await this.#run(
      this.#statements.acquireMysql(workId, holderId, ttlMs, false, false),
      signal,
    )
    // LAST_INSERT_ID(-1) marks exhausted tokens; mysql2 reads it back as -1 (or 2^64 - 1).
    if (insertId !== undefined && (insertId < 0n || insertId > MAX_FENCING_TOKEN))
      throw new TokensExhaustedError()
    // Kysely reports an insert id of 0 as undefined.
    if (insertId === undefined || insertId === 0n) {
      // Held when the statement ran: one read names the holder (this failure path only). The read comes
      // later, so a lease it finds free since then is reported held with no time left, never exhausted.
      const { rows } = await this.#run(this.#statements.holderOf(workId), signal)
      throw refusal(rows[0] && { ...rows[0], free: 0 })
    }
    const token = BigInt(insertId)
    const { rows } = await this.#run(
      this.#statements.acquiredRow(workId, token.toString(), withCheckpoint),
      signal,
    )
    const row = rows[0]
    if (!row) throw new Error('the lease expiry could not be read back')
    if (row.expires_at === null) {
      // The lease already expired and was taken over (a ttl shorter than a round trip): it ended by
      // "now" at the latest, and its checkpoint went with the row.
      if (withCheckpoint) throw new Error('the lease was taken over before its checkpoint could be read back')
      return { record: createLeaseRecord(workId, holderId, token, toMillis(row.now_ms)), row: {} }
    }
    return { record: createLeaseRecord(workId, holderId, token, toMillis(row.expires_at)), row }
  }

  async checkpoint(
    record: LeaseRecord,
    state: Uint8Array,
    ttlMs: number,
    options?: CheckpointOptions,
  ): Promise<void> {
    // The snapshot's state is already a private copy, so the caller may reuse its buffer at once.
    const args = validateCheckpointArgs(record, state, ttlMs, this.capabilities.maxStateBytes, options)
    const key = keyOf(args.record)
    const bytes = Buffer.from(args.state.buffer, args.state.byteOffset, args.state.byteLength)
    const result = await this.#run(
      this.#statements.checkpoint(key, bytes, args.ttlMs, args.sequence),
      args.signal,
    )
    if (affected(result) > 0n) return
    // MySQL without CLIENT_FOUND_ROWS reports changed rows, and an identical rewrite changes none. A record
    // that is valid after the update was valid during it (validity never comes back), so it landed.
    if (this.#dialect.family === 'mysql') {
      const { rows } = await this.#run(this.#statements.liveness(key), args.signal)
      if (rows.length > 0) return
    }
    throw new FencedError()
  }

  async renew(record: LeaseRecord, ttlMs: number, options?: CallOptions): Promise<void> {
    const args = validateRenewArgs(record, ttlMs, options)
    const key = keyOf(args.record)
    const result = await this.#run(this.#statements.renew(key, args.ttlMs), args.signal)
    if (affected(result) > 0n) return
    // One read to name the failure. "Valid and unexpired" can only mean the update matched without
    // changing anything (MySQL without CLIENT_FOUND_ROWS, same millisecond): the renew landed.
    const { rows } = await this.#run(this.#statements.liveness(key), args.signal)
    const row = rows[0]
    if (!row) throw new FencedError()
    if (Number(row.live) !== 1) throw new LeaseExpiredError()
  }

  /**
   * Renews many of one holder's leases in one UPDATE: when it changed as many rows as there are
   * records (each workId at most once, each matched on its primary key), all were renewed and that is
   * the only round trip. Otherwise one SELECT of all of them (the count does not say which) names each
   * outcome: valid and unexpired is renewed (by this statement, by the MySQL same-millisecond no-op,
   * or by a checkpoint meanwhile), valid and expired is expired, anything else fenced.
   */
  async renewMany(
    records: readonly LeaseRecord[],
    ttlMs: number,
    options?: CallOptions,
  ): Promise<RenewOutcome[]> {
    const args = validateRenewManyArgs(records, ttlMs, RENEW_MANY_MAX_RECORDS, options)
    if (args.holderId === undefined) return []
    const { holderId, records: valid } = args
    const result = await this.#run(this.#statements.renewMany(holderId, valid, args.ttlMs), args.signal)
    if (affected(result) === BigInt(valid.length)) return new Array(valid.length).fill('renewed')
    const { rows } = await this.#run(this.#statements.validAmong(holderId, valid), args.signal)
    const stored = new Map(rows.map((row) => [text(row.work_id), row]))
    return valid.map((record) => {
      const row = stored.get(record.workId)
      if (!row || String(row.token) !== record.fencingToken.toString()) return 'fenced'
      return isTrue(row.live) ? 'renewed' : 'expired'
    })
  }

  async release(record: LeaseRecord, options?: CallOptions): Promise<void> {
    const args = validateRecordArgs(record, options)
    // Setting released always changes a valid row, so zero rows means invalid even without found-rows.
    const result = await this.#run(this.#statements.release(keyOf(args.record)), args.signal)
    if (affected(result) === 0n) throw new FencedError()
  }

  async readCheckpoint(record: LeaseRecord, options?: CallOptions): Promise<CheckpointRead> {
    const args = validateRecordArgs(record, options)
    const { rows } = await this.#run(this.#statements.readCheckpoint(keyOf(args.record)), args.signal)
    const row = rows[0]
    if (!row) throw new FencedError()
    return checkpointRead(row)
  }

  /**
   * One page of leases by workId prefix: one SELECT over a range of the primary key (`prefix <= work_id
   * < the prefix's upper bound`, no LIKE, so `%` and `_` are plain characters), in byte order.
   */
  async list(options?: ListOptions): Promise<LeasePage> {
    const { prefix, cursor, limit, signal } = validateListArgs(options)
    const upper = prefixUpperBound(prefix)
    const { rows } = await this.#run(
      this.#statements.list({
        lower: prefix,
        limit: limit + 1,
        ...(upper === undefined ? {} : { upper }),
        ...(cursor === undefined ? {} : { cursor }),
      }),
      signal,
    )
    const leaseRows = rows.filter((row) => row.token !== null && row.token !== undefined)
    // The rows' own "now" judged `free`; the sentinel's is read a moment later, for an empty page.
    const nowMs = toMillis((leaseRows[0] ?? rows[0])?.now_ms)
    const leases = leaseRows.map((row) => listing(row)).sort((a, b) => compareWorkIds(a.workId, b.workId))
    const page = leases.slice(0, limit)
    return {
      leases: page,
      now: new Date(nowMs),
      ...(leases.length > limit ? { cursor: page.at(-1)!.workId } : {}),
    }
  }

  /**
   * Ends a live lease from outside, in one UPDATE; `false` when the lease was already free, or (with
   * `options.fencingToken`) stored at another token: the token is a predicate of that UPDATE.
   */
  async revoke(workId: string, options?: RevokeOptions): Promise<boolean> {
    const { fencingToken, signal } = validateRevokeArgs(workId, options)
    const result = await this.#run(this.#statements.revoke(workId, fencingToken?.toString()), signal)
    return affected(result) > 0n
  }

  async #run<R>(query: CompiledQuery<R>, signal: AbortSignal | undefined): Promise<QueryResult<R>> {
    // A signal firing mid-flight abandons the wait, not the statement (see raceAbort).
    return raceAbort(this.#execute(query, signal), signal)
  }

  async #execute<R>(query: CompiledQuery<R>, signal: AbortSignal | undefined): Promise<QueryResult<R>> {
    for (let attempt = 1; ; attempt++) {
      try {
        return await this.#db.executeQuery(query)
      } catch (error) {
        const code = (error as { code?: unknown }).code
        if (!this.#retrySerialization || attempt >= SERIALIZATION_RETRIES) throw error
        if (code !== '40001' && code !== '40P01') throw error
        // Nothing is resent once the caller gave up: its outcome is then the one it was told.
        if (signal?.aborted) throw error
        // Apart, as the writers it met may meet again: up to 1, 2, 4 ... 32 ms (full jitter).
        await new Promise((resolve) => setTimeout(resolve, Math.random() * Math.min(32, 2 ** attempt)))
        if (signal?.aborted) throw error
      }
    }
  }
}

/** A lease just taken, and the row that said so (with its state when the checkpoint was asked for). */
interface Taken {
  record: LeaseRecord
  row: Partial<CheckpointRow>
}

// Booleans come back as true/false (PostgreSQL) or 1/0 (SQLite, MySQL); bytes as Buffer or Uint8Array.
function checkpointRead(row: Partial<CheckpointRow>): CheckpointRead {
  // A type parser (pg's bytea parser replaced, mysql2's typeCast) or pg's binary result mode can hand
  // back a string here, which new Uint8Array() would read as no bytes at all: a store failure, not a state.
  if (row.state !== null && row.state !== undefined && !(row.state instanceof Uint8Array)) {
    throw new TypeError(
      `the client returned a checkpoint state that is no bytes (a ${typeof row.state}): see its type parsers or typeCast`,
    )
  }
  return {
    state: row.state === null || row.state === undefined ? null : new Uint8Array(row.state),
    cleanHandoff: isTrue(row.clean_handoff),
  }
}

/**
 * The error for an acquire that took nothing: TOKENS_EXHAUSTED for a free lease at the largest token
 * (acquire's own condition refused it), else LEASE_HELD naming the lease in the way.
 */
function refusal(row: HolderRow | undefined): Error {
  if (!row) return new LeaseHeldError()
  const fencingToken = BigInt(row.token)
  if (isTrue(row.free) && fencingToken >= MAX_FENCING_TOKEN) return new TokensExhaustedError()
  return leaseHeldBy({
    holderId: text(row.holder),
    fencingToken,
    expiresAtMs: toMillis(row.expires_at),
    expiresInMs: toMillis(row.expires_in),
  })
}

const text = (value: unknown): string =>
  value instanceof Uint8Array ? Buffer.from(value).toString('utf8') : String(value)

function listing(row: ListedRow): LeaseListing {
  const bytes = row.state_bytes === null || row.state_bytes === undefined ? null : Number(row.state_bytes)
  return Object.freeze({
    workId: text(row.work_id),
    holderId: text(row.holder),
    fencingToken: BigInt(row.token!),
    expiresAt: new Date(toMillis(row.expires_at)),
    released: isTrue(row.released),
    free: isTrue(row.free),
    checkpointBytes: bytes,
  })
}

// Booleans come back as true/false (PostgreSQL), 1/0 (SQLite, MySQL) or '1'/'0' (text casts).
function isTrue(value: unknown): boolean {
  // pg with its bool type parser replaced by the identity hands back PostgreSQL's text: 't' or 'f'.
  return value === true || value === 't' || Number(value) === 1
}

function keyOf(record: LeaseRecord): RecordKey {
  return { workId: record.workId, holderId: record.holderId, token: record.fencingToken.toString() }
}

function affected(result: QueryResult<unknown>): bigint {
  return result.numAffectedRows ?? 0n
}

function toMillis(value: unknown): number {
  const ms = Number(value)
  if (!Number.isSafeInteger(ms))
    throw new Error(`the server returned an expiry that is not epoch milliseconds: ${value}`)
  return ms
}
