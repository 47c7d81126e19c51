import { randomBytes } from 'node:crypto'
import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { createLeaseTable, dropLeaseTable, KyselyBackend } from '@worklease/kysely'
import type { Backend } from '@worklease/spec'
import Database from 'better-sqlite3'
import { Kysely, MysqlDialect, PostgresDialect, SqliteDialect, sql } from 'kysely'
import { createPool } from 'mysql2'
import pg from 'pg'
import type { PoolStoreName } from './pool-stores.js'
import type { PoolStoreSpec } from './protocol.js'

/** A store set up for one pool run: what the members are told, and the parent's own view of it. */
export interface PoolStore {
  readonly name: PoolStoreName
  readonly spec: PoolStoreSpec
  /** Server and version, e.g. `PostgreSQL 15.20`. */
  readonly server: string
  /** The parent's backend over the same leases, to compare the members' reports with the store. */
  readonly backend: Backend
  close(): Promise<void>
}

/**
 * Creates a fresh lease table (SQLite: a fresh file in WAL mode) for one pool run. PostgreSQL at
 * `POSTGRES_URL`, MariaDB at `MYSQL_URL`, else the development servers on 127.0.0.1.
 *
 * ```ts
 * const store = await openPoolStore('postgres')
 * ```
 */
export async function openPoolStore(name: PoolStoreName): Promise<PoolStore> {
  const table = `bench_pool_${randomBytes(4).toString('hex')}`
  if (name === 'sqlite') {
    const dir = mkdtempSync(join(tmpdir(), 'worklease-bench-pool-'))
    const file = join(dir, 'pool.db')
    const database = new Database(file, { timeout: 10_000 })
    database.pragma('journal_mode = WAL')
    const db = new Kysely<any>({ dialect: new SqliteDialect({ database }) })
    await createLeaseTable(db)
    const { rows } = await sql<{ v: string }>`SELECT sqlite_version() AS v`.execute(db)
    return {
      name,
      spec: { kind: 'sqlite', file },
      server: `SQLite ${rows[0]?.v ?? '?'} (file, WAL, synchronous=NORMAL in the members)`,
      backend: new KyselyBackend({ db }),
      async close() {
        await db.destroy()
        rmSync(dir, { recursive: true, force: true })
      },
    }
  }
  const url =
    name === 'postgres'
      ? (process.env.POSTGRES_URL ?? 'postgres://postgres@127.0.0.1:5432/test')
      : (process.env.MYSQL_URL ?? 'mysql://root@127.0.0.1:3306/test')
  const db = new Kysely<any>({
    dialect:
      name === 'postgres'
        ? new PostgresDialect({ pool: new pg.Pool({ connectionString: url, max: 1 }) })
        : new MysqlDialect({ pool: createPool({ uri: url, connectionLimit: 1 }) }),
  })
  try {
    await createLeaseTable(db, { table, dialect: name })
    const { rows } = await sql<{ v: string }>`${sql.raw(
      name === 'postgres' ? "SELECT current_setting('server_version') AS v" : 'SELECT VERSION() AS v',
    )}`.execute(db)
    return {
      name,
      spec: { kind: name, url, table },
      server: `${name === 'postgres' ? 'PostgreSQL' : 'MariaDB'} ${rows[0]?.v ?? '?'}`,
      backend: new KyselyBackend({ db, table, dialect: name }),
      async close() {
        await dropLeaseTable(db, { table, dialect: name }).catch(() => undefined)
        await db.destroy()
      },
    }
  } catch (error) {
    await db.destroy()
    throw error
  }
}
