import { randomBytes } from 'node:crypto'
import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import Database from 'better-sqlite3'
import { Kysely, type LogEvent, MysqlDialect, PostgresDialect, SqliteDialect, sql } from 'kysely'
import { createPool } from 'mysql2'
import pg from 'pg'

export const POSTGRES_URL = process.env.POSTGRES_URL ?? 'postgres://postgres@127.0.0.1:5432/test'
export const MYSQL_URL = process.env.MYSQL_URL ?? 'mysql://root@127.0.0.1:3306/test'

export type DialectFilter = 'postgres' | 'mysql' | 'sqlite'
type Logger = (event: LogEvent) => void

/** `WORKLEASE_DIALECTS=postgres,mysql,sqlite` (default: all) picks the servers the tests use. */
export function selected(filter: DialectFilter): boolean {
  const wanted = (process.env.WORKLEASE_DIALECTS ?? 'postgres,mysql,sqlite')
    .split(',')
    .map((name) => name.trim().toLowerCase())
  return wanted.includes(filter) || (filter === 'mysql' && wanted.includes('mariadb'))
}

// A few connections per simulated process: the race cases open five processes at once, and the
// machine's servers are shared with other test runs.
const POOL_SIZE = 4

export function postgresDb(log?: Logger, poolSize = POOL_SIZE): Kysely<any> {
  return new Kysely<any>({
    dialect: new PostgresDialect({ pool: new pg.Pool({ connectionString: POSTGRES_URL, max: poolSize }) }),
    log,
  })
}

export function mysqlDb(log?: Logger, poolSize = POOL_SIZE, flags?: string[]): Kysely<any> {
  return new Kysely<any>({
    dialect: new MysqlDialect({ pool: createPool({ uri: MYSQL_URL, connectionLimit: poolSize, flags }) }),
    log,
  })
}

export function sqliteDb(file: string, log?: Logger): Kysely<any> {
  // A busy timeout makes a writer wait for another connection's lock instead of failing with SQLITE_BUSY.
  return new Kysely<any>({
    dialect: new SqliteDialect({ database: new Database(file, { timeout: 5_000 }) }),
    log,
  })
}

let tempDir: string | undefined
/** A fresh database file in this run's temp dir, and a way to remove it with its WAL files. */
export function sqliteFile(): { path: string; remove(): void } {
  tempDir ??= mkdtempSync(join(tmpdir(), 'worklease-kysely-'))
  const path = join(tempDir, `${randomBytes(6).toString('hex')}.db`)
  return {
    path,
    remove: () => {
      for (const suffix of ['', '-wal', '-shm', '-journal']) rmSync(path + suffix, { force: true })
    },
  }
}

export function randomTable(): string {
  return `wl_${randomBytes(6).toString('hex')}`
}

/**
 * One database the tests run against. `connect` makes a new Kysely with its own pool (its own
 * connection for SQLite files), as a separate process would have. `:memory:` cannot be shared between
 * connections, so there every simulated process shares one Kysely and one connection.
 */
export interface Target {
  readonly name: string
  readonly filter: DialectFilter
  /** Fresh storage; `connect` opens it again; `dispose` drops it. */
  storage(): Promise<TargetStorage>
}

export interface TargetStorage {
  readonly table: string
  readonly separateConnections: boolean
  connect(log?: Logger): Kysely<any>
  /** Admin connection, not counted; used for setup, seeding and inspection. */
  readonly admin: Kysely<any>
  /** The database file, for SQLite file storage. */
  readonly file?: string
  dispose(): Promise<void>
}

function serverTarget(name: string, filter: DialectFilter, make: (log?: Logger) => Kysely<any>): Target {
  return {
    name,
    filter,
    async storage() {
      const admin = make(undefined)
      return {
        table: randomTable(),
        separateConnections: true,
        connect: make,
        admin,
        dispose: () => admin.destroy(),
      }
    },
  }
}

export const TARGETS: readonly Target[] = [
  serverTarget('postgres', 'postgres', (log) => postgresDb(log)),
  serverTarget('mariadb', 'mysql', (log) => mysqlDb(log)),
  {
    name: 'sqlite-file',
    filter: 'sqlite',
    async storage() {
      const file = sqliteFile()
      const admin = sqliteDb(file.path)
      // WAL lets readers run beside the writer; writers still queue on the busy timeout.
      await sql`PRAGMA journal_mode = WAL`.execute(admin)
      return {
        table: randomTable(),
        separateConnections: true,
        file: file.path,
        connect: (log) => sqliteDb(file.path, log),
        admin,
        dispose: async () => {
          await admin.destroy()
          file.remove()
        },
      }
    },
  },
  {
    name: 'sqlite-memory',
    filter: 'sqlite',
    async storage() {
      let log: Logger | undefined
      // One connection for everyone, with a log hook that follows whoever connected last.
      const admin = sqliteDb(':memory:', (event) => log?.(event))
      return {
        table: randomTable(),
        separateConnections: false,
        connect: (hook) => {
          log = hook
          return admin
        },
        admin,
        dispose: () => admin.destroy(),
      }
    },
  },
]

export function selectedTargets(): Target[] {
  return TARGETS.filter((target) => selected(target.filter))
}

export function targetNamed(name: string): Target {
  const target = TARGETS.find((candidate) => candidate.name === name)
  if (!target) throw new Error(`no test target named ${name}`)
  return target
}
