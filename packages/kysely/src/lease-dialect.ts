import type { Kysely } from 'kysely'
import { MysqlAdapter, PostgresAdapter, SqliteAdapter } from 'kysely'

/**
 * The SQL flavours {@link KyselyBackend} speaks.
 *
 * - `'postgres'`: PostgreSQL 9.5+ (`INSERT ... ON CONFLICT ... RETURNING`).
 * - `'mariadb'`: MariaDB 10.5+, whose `INSERT ... RETURNING` makes acquire one statement.
 * - `'mysql'`: MySQL 8 (no `RETURNING`), where acquire takes a second, read-only statement.
 * - `'sqlite'`: SQLite 3.35+ (`RETURNING`).
 *
 * ```ts
 * const backend = new KyselyBackend({ db, dialect: 'mariadb' })
 * ```
 */
export type LeaseDialect = 'postgres' | 'mysql' | 'mariadb' | 'sqlite'

/** The statement family: MySQL and MariaDB share everything but acquire's `RETURNING`. */
export type DialectFamily = 'postgres' | 'mysql' | 'sqlite'

/** What the backend knows of its server; `returning` is `undefined` until a MySQL-family probe settles it. */
export interface ResolvedDialect {
  readonly family: DialectFamily
  readonly returning: boolean | undefined
}

export const LEASE_DIALECTS: readonly LeaseDialect[] = ['postgres', 'mysql', 'mariadb', 'sqlite']

export function resolveDialect(dialect: LeaseDialect): ResolvedDialect {
  switch (dialect) {
    case 'postgres':
      return { family: 'postgres', returning: true }
    case 'sqlite':
      return { family: 'sqlite', returning: true }
    case 'mariadb':
      return { family: 'mysql', returning: true }
    case 'mysql':
      return { family: 'mysql', returning: false }
  }
}

// Third-party dialects (postgres.js, PGlite, libSQL, D1, ...) reuse Kysely's adapters, so the adapter says
// which SQL the server speaks. The name check covers a second copy of kysely, where instanceof fails.
export function detectFamily(db: Kysely<any>): DialectFamily | undefined {
  const adapter: unknown = db.getExecutor().adapter
  const is = (cls: abstract new (...args: any[]) => unknown, name: string): boolean =>
    adapter instanceof cls || (adapter as object | null)?.constructor?.name === name
  if (is(PostgresAdapter, 'PostgresAdapter')) return 'postgres'
  if (is(MysqlAdapter, 'MysqlAdapter')) return 'mysql'
  if (is(SqliteAdapter, 'SqliteAdapter')) return 'sqlite'
  return undefined
}
