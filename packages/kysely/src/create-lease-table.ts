import { type Kysely, type Migration, sql } from 'kysely'
import type { DialectFamily, LeaseDialect } from './lease-dialect.js'
import { checkLeaseTable } from './lease-table-check.js'
import { familyOf } from './table-family.js'
import { DEFAULT_TABLE } from './table-name.js'
import { readTableOptions, readTableOptionsOnly } from './table-options.js'
import { upgradeLeaseTable } from './upgrade-lease-table.js'

/** Options of {@link createLeaseTable}, {@link dropLeaseTable} and {@link createLeaseTableMigration}. */
export interface LeaseTableOptions {
  /**
   * The table to create; the same name goes to `KyselyBackend`. Default: `'worklease_leases'`.
   *
   * ```ts
   * await createLeaseTable(db, { table: 'jobs.leases' })
   * ```
   */
  table?: string
  /**
   * The SQL flavour. Default: detected from Kysely's dialect adapter (`'mysql'` and `'mariadb'` create
   * the same table).
   *
   * ```ts
   * await createLeaseTable(db, { dialect: 'sqlite' })
   * ```
   */
  dialect?: LeaseDialect
  /**
   * Leave an existing table in place (and bring it up to date) instead of failing. Default: `true`, so
   * the helper is safe to call at every start; `false` makes an existing table the database's error.
   * Ignored by {@link dropLeaseTable}.
   *
   * ```ts
   * await createLeaseTable(db, { table: 'leases', ifNotExists: false }) // throws if it exists
   * ```
   */
  ifNotExists?: boolean
}

/** What {@link createLeaseTable} returns: the `KyselyBackend` options that reach the table it made. */
export interface CreatedLeaseTable {
  /**
   * The table's name, as `KyselyBackend` takes it.
   *
   * ```ts
   * const backend = new KyselyBackend({ db, ...(await createLeaseTable(db, { table: 'leases' })) })
   * ```
   */
  table: string
}

// Column types per family, and why:
// - token: a signed 64-bit integer everywhere (SQLite's INTEGER is one; the CHECK turns SQLite's silent
//   overflow to REAL into an error).
// - SQLite keeps any type in any column: text in expires_at sorts above every integer (a lease renewed
//   forever), text in checkpoint_seq above every sequence (checkpoints that store nothing). The CHECKs
//   make such a row an error where it is written, as the other databases' column types do.
// - expires_at: epoch milliseconds as BIGINT, an instant that no session or server time zone can shift.
// - work_id/holder: compared byte for byte. PostgreSQL: COLLATE "C". MySQL/MariaDB: VARBINARY, because
//   the utf8mb4 collations (utf8mb4_bin included) are PAD SPACE, so 'a' and 'a ' would be one key and
//   one holder; 1020 bytes hold 255 UTF-16 code units of UTF-8. SQLite: TEXT's default BINARY collation,
//   in a UTF-8 database (createLeaseTable refuses a UTF-16 one).
// - checkpoint_seq: the largest checkpoint sequence stored for the current token (0 after acquire), a
//   positive safe integer, so a 64-bit column; a checkpoint not above it stores no state.
function createTableSql(family: DialectFamily, table: string, ifNotExists: boolean) {
  const name = sql.table(table)
  const create = sql.raw(ifNotExists ? 'CREATE TABLE IF NOT EXISTS' : 'CREATE TABLE')
  switch (family) {
    case 'postgres':
      return sql`${create} ${name} (
  work_id varchar(255) COLLATE "C" NOT NULL PRIMARY KEY,
  token bigint NOT NULL CHECK (token >= 1),
  holder varchar(255) COLLATE "C" NOT NULL,
  expires_at bigint NOT NULL,
  released boolean NOT NULL DEFAULT false,
  clean_handoff boolean NOT NULL DEFAULT true,
  checkpoint_seq bigint NOT NULL DEFAULT 0,
  state bytea
)`
    case 'mysql':
      return sql`${create} ${name} (
  work_id VARBINARY(1020) NOT NULL PRIMARY KEY,
  token BIGINT NOT NULL,
  holder VARBINARY(1020) NOT NULL,
  expires_at BIGINT NOT NULL,
  released TINYINT(1) NOT NULL DEFAULT 0,
  clean_handoff TINYINT(1) NOT NULL DEFAULT 1,
  checkpoint_seq BIGINT NOT NULL DEFAULT 0,
  state LONGBLOB NULL
) ENGINE=InnoDB`
    case 'sqlite':
      return sql`${create} ${name} (
  work_id TEXT NOT NULL PRIMARY KEY,
  token INTEGER NOT NULL CHECK (typeof(token) = 'integer' AND token >= 1),
  holder TEXT NOT NULL,
  expires_at INTEGER NOT NULL CHECK (typeof(expires_at) = 'integer'),
  released INTEGER NOT NULL DEFAULT 0 CHECK (released IN (0, 1)),
  clean_handoff INTEGER NOT NULL DEFAULT 1 CHECK (clean_handoff IN (0, 1)),
  checkpoint_seq INTEGER NOT NULL DEFAULT 0 CHECK (typeof(checkpoint_seq) = 'integer'),
  state BLOB
)`
  }
}

/**
 * Creates the lease table if it does not exist, with the right column types for the database, brings a
 * table created by an older version up to date (see {@link upgradeLeaseTable}), and returns the
 * `KyselyBackend` options that reach it. Shaped like every driver's set-up helper: `(client, options)`,
 * the name in `table` (default `'worklease_leases'`), idempotent unless `ifNotExists: false`. On SQLite
 * it refuses a database whose text encoding is UTF-16 (`PRAGMA encoding`, fixed when the file was
 * made): `list` orders and pages workIds by code point, which only UTF-8's byte order gives. On
 * PostgreSQL it refuses a database not encoded UTF8 (`SHOW server_encoding`): there some valid ids
 * would not fit. On MySQL/MariaDB it refuses a connection with `autocommit` off: no lease statement
 * would be committed.
 *
 * ```ts
 * await createLeaseTable(db)                              // worklease_leases, flavour detected
 * await createLeaseTable(db, { table: 'leases', dialect: 'mysql' })
 * const backend = new KyselyBackend({ db, ...(await createLeaseTable(db, { table: 'jobs.leases' })) })
 * ```
 */
export async function createLeaseTable(
  db: Kysely<any>,
  options: LeaseTableOptions = {},
): Promise<CreatedLeaseTable> {
  const { table = DEFAULT_TABLE, dialect, ifNotExists = true } = readTableOptions(db, options)
  const family = familyOf(db, dialect)
  if (family === 'sqlite') await requireUtf8(db)
  if (family === 'postgres') await requireUtf8Server(db)
  if (family === 'mysql') await requireAutocommit(db)
  const plain = db.withoutPlugins()
  // An existing table is not created again, only checked and brought up to date: PostgreSQL and MySQL
  // check the privilege to create before IF NOT EXISTS, so an application role that may only use the
  // table was refused at every start.
  const created = { whereCreated: true }
  if (!ifNotExists || !(await checkLeaseTable(plain, family, table, created)).exists) {
    try {
      await createTableSql(family, table, ifNotExists).execute(plain)
    } catch (error) {
      // Processes starting at once: PostgreSQL's IF NOT EXISTS can still fail in all but one of them,
      // on its own catalog (a unique violation on pg_type), the table made by another meanwhile.
      if (!ifNotExists || !(await checkLeaseTable(plain, family, table, created)).exists) throw error
    }
  }
  if (ifNotExists) await upgradeLeaseTable(db, { table, ...(dialect === undefined ? {} : { dialect }) })
  return { table }
}

/**
 * SQLite's BINARY collation compares text in the database's own encoding, chosen when the file was
 * created: UTF-8's bytes sort by code point, as `list` must (see `compareWorkIds`), UTF-16's do not
 * (U+10000 sorts below U+FFFF, and little-endian scrambles even the BMP).
 */
async function requireUtf8(db: Kysely<any>): Promise<void> {
  const { rows } = await sql<{ encoding: string }>`PRAGMA encoding`.execute(db.withoutPlugins())
  const encoding = rows[0]?.encoding
  if (encoding !== 'UTF-8') {
    throw new Error(
      `this SQLite database's text encoding is ${encoding}: worklease's lease table needs a UTF-8 database (SQLite's default), whose BINARY order is code point order`,
    )
  }
}

/**
 * PostgreSQL's text is in the database's encoding: in SQL_ASCII `varchar(255)` counts bytes (a
 * 255-character id of three-byte characters is too long), and LATIN1 has no emoji at all. Ids the
 * contract allows would fail in the store, as errors no caller can tell from an outage.
 */
async function requireUtf8Server(db: Kysely<any>): Promise<void> {
  const { rows } = await sql<{ server_encoding: string }>`SHOW server_encoding`.execute(db.withoutPlugins())
  const encoding = rows[0]?.server_encoding
  if (encoding !== 'UTF8') {
    throw new Error(
      `this PostgreSQL database's encoding is ${encoding}: worklease's lease table needs a UTF8 database (CREATE DATABASE ... ENCODING 'UTF8'), where every id the contract allows fits`,
    )
  }
}

/**
 * With `autocommit` off (a server's `autocommit=0`, or a pool that sets it on every connection) each
 * statement opens a transaction nobody commits: an acquire answers with its token while no other
 * connection sees the row, and once the connection rolls back another holder gets the same token.
 * Found at set-up, before any lease is handed out, not by two holders of one token.
 */
async function requireAutocommit(db: Kysely<any>): Promise<void> {
  const { rows } = await sql<{ autocommit: unknown }>`SELECT @@autocommit AS autocommit`.execute(
    db.withoutPlugins(),
  )
  if (Number(rows[0]?.autocommit) !== 1) {
    throw new Error(
      'this MySQL/MariaDB connection runs with autocommit off: every lease statement would stay uncommitted (another holder could be given the same token); turn autocommit on for the pool worklease uses',
    )
  }
}

/**
 * Drops the lease table if it exists. Tokens restart at 1 afterwards, so only do this when no holder
 * of an old token can still write anywhere.
 *
 * ```ts
 * await dropLeaseTable(db, { table: 'leases' })
 * ```
 */
export async function dropLeaseTable(db: Kysely<any>, options: LeaseTableOptions = {}): Promise<void> {
  const { table = DEFAULT_TABLE } = readTableOptions(db, options)
  await sql`DROP TABLE IF EXISTS ${sql.table(table)}`.execute(db.withoutPlugins())
}

/**
 * A Kysely `Migration` that creates the lease table (and drops it on `down`), for `Migrator` users.
 *
 * ```ts
 * const migrator = new Migrator({
 *   db,
 *   provider: { getMigrations: async () => ({ '0001_worklease': createLeaseTableMigration() }) },
 * })
 * await migrator.migrateToLatest()
 * ```
 */
export function createLeaseTableMigration(options: LeaseTableOptions = {}): Migration {
  // Read once, now: `up` may run much later, and must create the table that was checked.
  const read = readTableOptionsOnly(options)
  return {
    up: async (db) => {
      await createLeaseTable(db, read)
    },
    down: (db) => dropLeaseTable(db, read),
  }
}
