import { type Kysely, sql } from 'kysely'
import type { DialectFamily } from './lease-dialect.js'
import { foldingCollations } from './sqlite-declared-collations.js'

/** What {@link checkLeaseTable} found. `whereCreated`: the table a CREATE of that name would make. */
export interface LeaseTableState {
  /** Whether a table of that name exists at all. */
  readonly exists: boolean
  /** Whether it has the `checkpoint_seq` column (a table from before it does not). */
  readonly hasCheckpointSeq: boolean
}

/** One column as the database describes it, for the checks below. */
interface Column {
  readonly name: string
  /** PostgreSQL: the base type's name (`varchar`, `int8`); MySQL: DATA_TYPE; SQLite: the declared type. */
  readonly type: string
  /** PostgreSQL and MySQL: the collation's name; null where the type has none. */
  readonly collation: string | null
  /** PostgreSQL: whether the collation orders text by code point; MySQL: the character set. */
  readonly codePointOrder?: boolean
  readonly deterministic?: boolean
  readonly charset?: string | null
  /** MySQL: the longest value, in characters (bytes for binary types). */
  readonly length?: number | null
}

// Every version's table has these; checkpoint_seq is the one upgradeLeaseTable adds.
const LEASE_COLUMNS = ['work_id', 'token', 'holder', 'expires_at', 'released', 'clean_handoff', 'state']
const ID_COLUMNS = new Set(['work_id', 'holder'])
const INTEGER_COLUMNS = new Set(['token', 'expires_at', 'checkpoint_seq'])

/**
 * Reads an existing lease table's columns and refuses one that would break leases, before anything
 * is altered or any lease is handed out. A table made by hand (a migration tool's DDL), or another
 * table of the same name, is what this is for: `createLeaseTable`'s own always passes.
 * - Not a lease table (no `work_id`, `token`, ...): refused, not altered.
 * - Ids that two distinct ids could share, or that valid ids do not fit: a collation that folds
 *   (case, trailing spaces), a blank- or zero-padded type (`char`, `BINARY(n)`), a character set
 *   without every character (MySQL's `utf8mb3`, `latin1`), too short a column.
 * - Ids in an order other than their code points' (PostgreSQL's `en-x-icu`, or a database default
 *   that is not C): `list` pages by ranges of that order, and would skip or repeat leases.
 * - `token`, `expires_at` or `checkpoint_seq` narrower than 64 bits: a token past 2^31 - 1 would be
 *   a store error though the contract allows it.
 * SQLite: the declared type's affinity (`INTEGER` ids would make `'01'` and `'1'` one lease) and any
 * `COLLATE` but BINARY in the table's definition.
 */
export async function checkLeaseTable(
  db: Kysely<any>,
  family: DialectFamily,
  table: string,
  { whereCreated = false }: { whereCreated?: boolean } = {},
): Promise<LeaseTableState> {
  const columns = await readColumns(db, family, table, whereCreated)
  if (columns.length === 0) return { exists: false, hasCheckpointSeq: false }
  const byName = new Map(columns.map((column) => [column.name.toLowerCase(), column]))
  const missing = LEASE_COLUMNS.filter((name) => !byName.has(name))
  if (missing.length > 0) {
    throw new Error(
      `the table ${table} is not a worklease lease table: it has no ${missing.join(', ')} column${missing.length > 1 ? 's' : ''}; nothing was changed. Give worklease a table of its own (the table option)`,
    )
  }
  const problems: string[] = []
  // In one order, whatever order the database listed them in: the same table, the same message.
  for (const name of [...LEASE_COLUMNS, 'checkpoint_seq']) {
    const column = byName.get(name)
    if (column === undefined) continue
    const problem = ID_COLUMNS.has(name)
      ? idProblem(family, column)
      : INTEGER_COLUMNS.has(name)
        ? integerProblem(family, column)
        : undefined
    if (problem) problems.push(`${name} ${problem}`)
  }
  if (family === 'sqlite') problems.push(...(await sqliteCollations(db, table)))
  if (problems.length > 0) {
    throw new Error(
      `the lease table ${table} has columns that would break leases: ${problems.join('; ')}. Make them as createLeaseTable does (${MADE_AS[family]})`,
    )
  }
  return { exists: true, hasCheckpointSeq: byName.has('checkpoint_seq') }
}

const MADE_AS: Record<DialectFamily, string> = {
  postgres: 'ids varchar(255) COLLATE "C", token, expires_at and checkpoint_seq bigint',
  mysql: 'ids VARBINARY(1020), token, expires_at and checkpoint_seq BIGINT',
  sqlite: 'ids TEXT with no COLLATE, token, expires_at and checkpoint_seq INTEGER',
}

function idProblem(family: DialectFamily, column: Column): string | undefined {
  const { type, collation } = column
  switch (family) {
    case 'postgres':
      if (type === 'bpchar') return 'is char(n): blank-padded, so ids differing in trailing spaces are one'
      if (type !== 'varchar' && type !== 'text') return `is ${type}, not text`
      if (column.deterministic === false)
        return `(collation ${collation}) folds ids: two ids it calls equal would share one lease`
      if (!column.codePointOrder)
        return `(collation ${collation}) does not order ids by code point: list would skip or repeat leases`
      return undefined
    case 'mysql': {
      if (type === 'char' || type === 'binary')
        return `is ${type.toUpperCase()}(n): padded, so ids differing in trailing spaces (or none) are one`
      if (type === 'varbinary')
        return (column.length ?? 0) < 1020 ? `holds ${column.length} bytes: 1020 fit any id` : undefined
      if (type !== 'varchar') return `is ${type}, not VARBINARY`
      if (column.charset !== 'utf8mb4')
        return `is in character set ${column.charset}: some valid ids (emoji, say) cannot be stored`
      if (collation === null || !/_(0900|nopad)_bin$/.test(collation))
        return `(${collation}) compares under a collation that folds ids: two ids it calls equal would share one lease`
      return (column.length ?? 0) < 255 ? `holds ${column.length} characters: 255 fit any id` : undefined
    }
    case 'sqlite': {
      const affinity = sqliteAffinity(type)
      return affinity === 'text' || affinity === 'blob'
        ? undefined
        : `is ${type} (${affinity} affinity): ids that read as numbers ('01', '1') would be one`
    }
  }
}

function integerProblem(family: DialectFamily, column: Column): string | undefined {
  const wide =
    family === 'postgres'
      ? column.type === 'int8'
      : family === 'mysql'
        ? column.type === 'bigint'
        : sqliteAffinity(column.type) === 'integer'
  return wide ? undefined : `is ${column.type}, not a 64-bit integer`
}

// SQLite's rules for a declared type's affinity, in its order.
function sqliteAffinity(declared: string): 'integer' | 'text' | 'blob' | 'real' | 'numeric' {
  const type = declared.toUpperCase()
  if (type.includes('INT')) return 'integer'
  if (/CHAR|CLOB|TEXT/.test(type)) return 'text'
  if (type.includes('BLOB') || type === '') return 'blob'
  if (/REAL|FLOA|DOUB/.test(type)) return 'real'
  return 'numeric'
}

async function readColumns(
  db: Kysely<any>,
  family: DialectFamily,
  table: string,
  whereCreated: boolean,
): Promise<Column[]> {
  const [schema, name] = table.includes('.') ? table.split('.') : [undefined, table]
  switch (family) {
    case 'postgres':
      return postgresColumns(db, table, whereCreated)
    case 'mysql': {
      const { rows } = await sql<
        Record<string, unknown>
      >`SELECT TABLE_NAME AS table_name, COLUMN_NAME AS name,
  DATA_TYPE AS type, CHARACTER_SET_NAME AS charset, COLLATION_NAME AS collation,
  CHARACTER_MAXIMUM_LENGTH AS length FROM information_schema.COLUMNS
WHERE TABLE_SCHEMA = COALESCE(${schema ?? null}, DATABASE()) AND TABLE_NAME = ${name}
LIMIT 4096`.execute(db)
      // The LIMIT of its own: a connection's sql_select_limit cuts a SELECT without one (to no rows:
      // "no table"). The name matches without regard to case here; a server that keeps names as given may hold
      // tables that differ only in case, of which the statements reach the one spelt alike.
      const exact = rows.filter((row) => String(row.table_name) === name)
      return (exact.length > 0 ? exact : rows).map((row) => ({
        name: String(row.name),
        type: String(row.type).toLowerCase(),
        collation: row.collation === null ? null : String(row.collation),
        charset: row.charset === null ? null : String(row.charset),
        length: row.length === null ? null : Number(row.length),
      }))
    }
    case 'sqlite': {
      const { rows } = await sql<{ name: string; type: string }>`SELECT name, type
FROM pragma_table_info(${name}, ${schema ?? 'main'})`.execute(db)
      return rows.map((row) => ({ name: row.name, type: row.type, collation: null }))
    }
  }
}

// A collation orders text by code point when it compares code points (or UTF-8 bytes): C, POSIX and
// C.UTF-8 (libc's, or the builtin provider's of PostgreSQL 17), ucs_basic, pg_c_utf8 and
// PostgreSQL 18's pg_unicode_fast (builtin, code point order with full case mapping).
const CODE_POINT_COLLATIONS = new Set(['C', 'POSIX', 'ucs_basic', 'pg_c_utf8', 'pg_unicode_fast'])
const CODE_POINT_LOCALES: Record<string, readonly string[]> = {
  c: ['C', 'POSIX', 'C.UTF8'],
  b: ['C', 'C.UTF8', 'PG_UNICODE_FAST'],
}
const codePointLocale = (provider: unknown, locale: unknown) =>
  typeof locale === 'string' &&
  (CODE_POINT_LOCALES[String(provider)] ?? []).includes(locale.toUpperCase().replace('UTF-8', 'UTF8'))

async function postgresColumns(db: Kysely<any>, table: string, whereCreated: boolean): Promise<Column[]> {
  // to_regclass resolves the name as the statements do (search_path, quoted identifiers). Where a
  // CREATE would put it instead, an unqualified name is looked for in the first schema of the
  // search_path alone: one of that name in a later schema is another table, which CREATE TABLE IF
  // NOT EXISTS would not have stopped at.
  const quoted = table
    .split('.')
    .map((part) => `"${part}"`)
    .join('.')
  const relation =
    whereCreated && !table.includes('.')
      ? sql`quote_ident(current_schema()) || '.' || ${quoted}`
      : sql`${quoted}`
  // to_jsonb for the columns that differ between versions (colllocale is PostgreSQL 17's).
  const { rows } = await sql<{
    name: string
    type: string
    collation: string | null
    c: Record<string, unknown> | null
  }>`SELECT a.attname AS name, t.typname AS type, c.collname AS collation, to_jsonb(c) AS c
FROM pg_attribute a JOIN pg_type t ON t.oid = a.atttypid LEFT JOIN pg_collation c ON c.oid = a.attcollation
WHERE a.attrelid = to_regclass(${relation}) AND a.attnum > 0 AND NOT a.attisdropped`.execute(db)
  let databaseOrder: boolean | undefined
  const columns: Column[] = []
  for (const row of rows) {
    const c = row.c ?? {}
    let codePointOrder =
      CODE_POINT_COLLATIONS.has(String(row.collation)) ||
      codePointLocale(c.collprovider, c.collprovider === 'b' ? c.colllocale : c.collcollate)
    if (row.collation === 'default') {
      databaseOrder ??= await databaseCodePointOrder(db)
      codePointOrder = databaseOrder
    }
    columns.push({
      name: row.name,
      type: row.type,
      collation: row.collation,
      codePointOrder,
      deterministic: c.collisdeterministic !== false,
    })
  }
  return columns
}

async function databaseCodePointOrder(db: Kysely<any>): Promise<boolean> {
  const { rows } = await sql<{ d: Record<string, unknown> }>`SELECT to_jsonb(d) AS d FROM pg_database d
WHERE d.datname = current_database()`.execute(db)
  const d = rows[0]?.d ?? {}
  // datlocprovider is PostgreSQL 15's (libc before it), datlocale 17's (daticulocale in 15 and 16).
  const provider = d.datlocprovider ?? 'c'
  return codePointLocale(provider, provider === 'b' ? d.datlocale : d.datcollate)
}

async function sqliteCollations(db: Kysely<any>, table: string): Promise<string[]> {
  const [schema, name] = table.includes('.') ? table.split('.') : ['main', table]
  const { rows } = await sql<{ sql: string | null }>`SELECT sql FROM ${sql.table(`${schema}.sqlite_master`)}
WHERE type = 'table' AND name = ${name} COLLATE NOCASE`.execute(db)
  return foldingCollations(rows[0]?.sql ?? '').map((problem) => `${problem}, which folds ids`)
}
