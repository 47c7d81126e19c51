import { randomBytes } from 'node:crypto'
import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { createLeaseTable, dropLeaseTable, KyselyBackend } from '@worklease/kysely'
import Database from 'better-sqlite3'
import { Kysely, type LogEvent, MysqlDialect, PostgresDialect, SqliteDialect, sql } from 'kysely'
import { createPool } from 'mysql2'
import pg from 'pg'
import type { Session, Target } from '../target.js'
import { SentTexts } from './sent-texts.js'
import { type SqlFlavour, sqlBaseline } from './sql-baseline.js'

// A suffix per run, so a second run against the same database never meets this one's rows.
const RUN = randomBytes(4).toString('hex')
const WORKLEASE_TABLE = `bench_worklease_${RUN}`
const BASELINE_TABLE = `bench_baseline_${RUN}`

type Connect = (poolSize: number, log?: (event: LogEvent) => void) => Kysely<any>

async function openSqlTarget(
  flavour: SqlFlavour,
  connect: Connect,
  describe: { origin: string; notes: string[]; versionQuery: string; serverName: string; url?: string },
  cleanup: () => void = () => undefined,
): Promise<Target> {
  const admin = connect(1)
  const tables = [WORKLEASE_TABLE, BASELINE_TABLE]
  const dialect = flavour
  for (const table of tables) {
    await dropLeaseTable(admin, { table, dialect })
    await createLeaseTable(admin, { table, dialect })
  }
  const { rows } = await sql<{ v: string }>`${sql.raw(describe.versionQuery)}`.execute(admin)
  return {
    name: flavour,
    server: `${describe.serverName} ${rows[0]?.v ?? '?'}`,
    origin: describe.origin,
    ...(describe.url ? { url: describe.url } : {}),
    notes: describe.notes,
    async open(poolSize): Promise<Session> {
      let statements = 0
      const sent = new SentTexts()
      const db = connect(poolSize, ({ query: { sql: text } }) => {
        statements++
        if (text.includes(WORKLEASE_TABLE))
          sent.record('worklease', () => text.replaceAll(WORKLEASE_TABLE, '<table>'))
        else if (text.includes(BASELINE_TABLE))
          sent.record('baseline', () => text.replaceAll(BASELINE_TABLE, '<table>'))
      })
      return {
        backend: new KyselyBackend({ db, table: WORKLEASE_TABLE, dialect }),
        baseline: sqlBaseline(db, flavour, BASELINE_TABLE),
        roundTrips: () => statements,
        recordStatements: () => sent.start(),
        close: () => db.destroy(),
      }
    },
    async close() {
      for (const table of tables) await dropLeaseTable(admin, { table, dialect })
      await admin.destroy()
      cleanup()
    },
  }
}

/** PostgreSQL at `POSTGRES_URL` (default: the development server on 127.0.0.1:5432, database `test`). */
export function openPostgresTarget(): Promise<Target> {
  const url = process.env.POSTGRES_URL ?? 'postgres://postgres@127.0.0.1:5432/test'
  return openSqlTarget(
    'postgres',
    (max, log) =>
      new Kysely<any>({
        dialect: new PostgresDialect({ pool: new pg.Pool({ connectionString: url, max }) }),
        ...(log ? { log } : {}),
      }),
    {
      origin: process.env.POSTGRES_URL ? 'POSTGRES_URL' : '127.0.0.1:5432',
      url,
      notes: ['pg Pool through Kysely PostgresDialect'],
      versionQuery: "SELECT current_setting('server_version') AS v",
      serverName: 'PostgreSQL',
    },
  )
}

/** MariaDB (or MySQL) at `MYSQL_URL` (default: 127.0.0.1:3306, database `test`). */
export function openMariadbTarget(): Promise<Target> {
  const uri = process.env.MYSQL_URL ?? 'mysql://root@127.0.0.1:3306/test'
  return openSqlTarget(
    'mariadb',
    (connectionLimit, log) =>
      new Kysely<any>({
        dialect: new MysqlDialect({ pool: createPool({ uri, connectionLimit }) }),
        ...(log ? { log } : {}),
      }),
    {
      origin: process.env.MYSQL_URL ? 'MYSQL_URL' : '127.0.0.1:3306',
      notes: ['mysql2 pool through Kysely MysqlDialect, dialect: mariadb (INSERT ... RETURNING)'],
      versionQuery: 'SELECT VERSION() AS v',
      serverName: 'MariaDB',
    },
  )
}

/**
 * SQLite in a fresh file in WAL mode (the way the kysely tests run it), through better-sqlite3. A
 * Kysely SqliteDialect has one connection, so "pool size" does not apply: concurrent calls queue.
 */
export function openSqliteTarget(): Promise<Target> {
  const dir = mkdtempSync(join(tmpdir(), 'worklease-bench-'))
  const file = join(dir, 'bench.db')
  const connect: Connect = (_poolSize, log) => {
    const database = new Database(file, { timeout: 5_000 })
    database.pragma('journal_mode = WAL')
    return new Kysely<any>({ dialect: new SqliteDialect({ database }), ...(log ? { log } : {}) })
  }
  return openSqlTarget(
    'sqlite',
    connect,
    {
      origin: 'temporary file',
      notes: ['better-sqlite3 through Kysely SqliteDialect, one connection, WAL, synchronous=FULL (default)'],
      versionQuery: 'SELECT sqlite_version() AS v',
      serverName: 'SQLite',
    },
    () => rmSync(dir, { recursive: true, force: true }),
  )
}
