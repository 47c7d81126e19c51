import { type RawBuilder, sql } from 'kysely'
import type { DialectFamily } from './lease-dialect.js'

/**
 * A fencing token as SQL: its decimal text as a parameter, cast on the server. MySQL compares a BIGINT
 * column with a string parameter as DOUBLE, which would confuse tokens above 2^53, and a JS number
 * would lose them before they leave the process.
 */
export function tokenSql(family: DialectFamily, token: unknown): RawBuilder<unknown> {
  return sql`CAST(${token} AS ${TOKEN_TYPE[family]})`
}

const TOKEN_TYPE: Record<DialectFamily, RawBuilder<unknown>> = {
  postgres: sql.raw('bigint'),
  mysql: sql.raw('SIGNED'),
  sqlite: sql.raw('INTEGER'),
}
