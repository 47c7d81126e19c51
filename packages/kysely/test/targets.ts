import { randomBytes } from 'node:crypto'
import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { genuineServers, notSetReason } from '@worklease/test-servers'
import Database from 'better-sqlite3'
import { Kysely, type LogEvent, MysqlDialect, PostgresDialect, SqliteDialect, sql } from 'kysely'
import { createPool } from 'mysql2'
import pg from 'pg'
import type { LeaseDialect } from '../src/index.js'

export const POSTGRES_URL = process.env.POSTGRES_URL ?? 'postgres://postgres@127.0.0.1:5432/test'
export const MYSQL_URL = process.env.MYSQL_URL ?? 'mysql://root@127.0.0.1:3306/test'
// The genuine servers of scripts/servers.sh; no default: without them their targets are skipped.
export const { mysql97: MYSQL97_URL, postgres18: POSTGRES18_URL } = genuineServers()

export type DialectFilter = 'postgres' | 'mysql' | 'sqlite'
type Logger = (event: LogEvent) => void

function wantedNames(): string[] {
  return (process.env.WORKLEASE_DIALECTS ?? 'postgres,mysql,sqlite')
    .split(',')
    .map((name) => name.trim().toLowerCase())
}

/**
 * `WORKLEASE_DIALECTS=postgres,mysql,sqlite` (default: all) picks the SQL families the tests use; a
 * target's own name (`mysql97`, `postgres18`, `mariadb`, ...) picks that target alone.
 */
export function selected(filter: DialectFilter): boolean {
  const wanted = wantedNames()
  return wanted.includes(filter) || TARGETS.some((t) => t.filter === filter && wanted.includes(t.name))
}

// A few connections per simulated process: the race cases open five processes at once, and the
// machine's servers are shared with other test runs.
const POOL_SIZE = 4

/** `config`: a user's own client settings (type parsers, `binary`, session `options`) on top. */
export function postgresDb(
  log?: Logger,
  poolSize = POOL_SIZE,
  url = POSTGRES_URL,
  config: pg.PoolConfig = {},
): Kysely<any> {
  return new Kysely<any>({
    dialect: new PostgresDialect({ pool: new pg.Pool({ connectionString: url, max: poolSize, ...config }) }),
    log,
  })
}

export function mysqlDb(log?: Logger, poolSize = POOL_SIZE, flags?: string[], url = MYSQL_URL): Kysely<any> {
  return new Kysely<any>({
    dialect: new MysqlDialect({ pool: createPool({ uri: url, connectionLimit: poolSize, flags }) }),
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
  /** What the server is, as `KyselyBackend`'s `dialect` option names it (MySQL: no `RETURNING`). */
  readonly dialect: LeaseDialect
  /** The server's URL, for targets on a server (the pitfall tests open their own connections). */
  readonly url?: string
  /** Why the target cannot run here (its server's variable is unset), or undefined. */
  readonly unavailable?: string
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

function serverTarget(
  name: string,
  dialect: LeaseDialect,
  url: string | undefined,
  variable: string,
  make: (log: Logger | undefined, url: string) => Kysely<any>,
): Target {
  return {
    name,
    filter: dialect === 'mariadb' ? 'mysql' : (dialect as DialectFilter),
    dialect,
    url,
    unavailable: url ? undefined : notSetReason(variable),
    async storage() {
      if (!url) throw new Error(`target ${name}: ${variable} is not set`)
      const make_ = (log?: Logger) => make(log, url)
      const admin = make_(undefined)
      return {
        table: randomTable(),
        separateConnections: true,
        connect: make_,
        admin,
        dispose: () => admin.destroy(),
      }
    },
  }
}

/**
 * Every database the suites run on: the machine's PostgreSQL 15 and MariaDB (`postgres`, `mariadb`),
 * SQLite, and the genuine servers of scripts/servers.sh (`mysql97`, `postgres18`), which are skipped,
 * with the reason printed, when their variables are unset.
 */
export const TARGETS: readonly Target[] = [
  serverTarget('postgres', 'postgres', POSTGRES_URL, 'POSTGRES_URL', (log, url) =>
    postgresDb(log, POOL_SIZE, url),
  ),
  serverTarget('mariadb', 'mariadb', MYSQL_URL, 'MYSQL_URL', (log, url) =>
    mysqlDb(log, POOL_SIZE, undefined, url),
  ),
  serverTarget('mysql97', 'mysql', MYSQL97_URL, 'MYSQL97_URL', (log, url) =>
    mysqlDb(log, POOL_SIZE, undefined, url),
  ),
  serverTarget('postgres18', 'postgres', POSTGRES18_URL, 'POSTGRES18_URL', (log, url) =>
    postgresDb(log, POOL_SIZE, url),
  ),
  {
    name: 'sqlite-file',
    filter: 'sqlite',
    dialect: 'sqlite',
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
    dialect: 'sqlite',
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

const reported = new Set<string>()

/**
 * Whether `target` runs in this process: picked by WORKLEASE_DIALECTS and its server known. A target
 * left out for want of its server says so once per test file, so a skip is never silent.
 */
export function runs(target: Target): boolean {
  const wanted = wantedNames()
  const picked = wanted.includes(target.filter) || wanted.includes(target.name)
  if (!picked) return false
  if (target.unavailable) {
    if (!reported.has(target.name)) {
      reported.add(target.name)
      console.warn(`[worklease kysely] skipping target ${target.name}: ${target.unavailable}`)
    }
    return false
  }
  return true
}

export function selectedTargets(): Target[] {
  return TARGETS.filter(runs)
}

/** The targets of one SQL family that run here, e.g. MariaDB and MySQL 9.7 for `'mysql'`. */
export function familyTargets(filter: DialectFilter): Target[] {
  return TARGETS.filter((target) => target.filter === filter && target.filter !== 'sqlite').filter(runs)
}

export function targetNamed(name: string): Target {
  const target = TARGETS.find((candidate) => candidate.name === name)
  if (!target) throw new Error(`no test target named ${name}`)
  return target
}
