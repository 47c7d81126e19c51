import { type Kysely, sql } from 'kysely'
import type { LeaseTableOptions } from './create-lease-table.js'
import type { DialectFamily } from './lease-dialect.js'
import { familyOf } from './table-family.js'
import { DEFAULT_TABLE, validateTableName } from './table-name.js'
import { readTableOptions } from './table-options.js'

const COLUMN_TYPE: Record<DialectFamily, string> = {
  postgres: 'bigint NOT NULL DEFAULT 0',
  mysql: 'BIGINT NOT NULL DEFAULT 0',
  sqlite: 'INTEGER NOT NULL DEFAULT 0',
}

/**
 * Brings a lease table created by an older `@worklease/kysely` up to date: adds the `checkpoint_seq`
 * column (ordered checkpoints) when it is missing, and does nothing otherwise, so it is safe to run
 * at every start. It refuses a table whose id columns compare under a collation that folds them (one
 * made by hand with MySQL's `utf8mb4` text, say): two ids it calls equal would share one lease. `createLeaseTable` calls it too. Upgrade the table before any process runs the new
 * version: the new statements name the column and fail loudly on a table without it.
 *
 * ```ts
 * await upgradeLeaseTable(db, { table: 'jobs.leases' })
 * // With Kysely's Migrator, as a migration after the one that created the table:
 * const migrations = {
 *   '0001_worklease': createLeaseTableMigration(),
 *   '0002_worklease_checkpoint_seq': { up: (db: Kysely<any>) => upgradeLeaseTable(db) },
 * }
 * ```
 */
export async function upgradeLeaseTable(db: Kysely<any>, options: LeaseTableOptions = {}): Promise<void> {
  const { table = DEFAULT_TABLE, dialect } = readTableOptions(db, options)
  validateTableName(table)
  const family = familyOf(db, dialect)
  const plain = db.withoutPlugins()
  await requireExactIds(plain, family, table)
  // Look before altering: ALTER TABLE takes a lock every running lease statement would queue behind, and
  // PostgreSQL's ADD COLUMN IF NOT EXISTS takes it even when the column is there.
  if (await hasCheckpointSeq(plain, family, table)) return
  try {
    await sql`ALTER TABLE ${sql.table(table)} ADD COLUMN checkpoint_seq ${sql.raw(COLUMN_TYPE[family])}`.execute(
      plain,
    )
  } catch (error) {
    // Another process starting at the same moment may have added it first.
    if (!(await hasCheckpointSeq(plain, family, table))) throw error
  }
}

/**
 * A table made by hand (a migration tool's DDL) may compare ids under a collation that folds them:
 * MySQL's default `utf8mb4` ones ignore case and trailing spaces, so `'job-1'`, `'Job-1'` and
 * `'job-1 '` would be one lease, sharing tokens and checkpoints. Refused: on MySQL/MariaDB any id
 * column but a binary one or one in a NO PAD binary collation (`*_0900_bin`, `*_nopad_bin`; plain
 * `*_bin` pads trailing spaces); on PostgreSQL one in a nondeterministic collation (equality under a
 * deterministic one is byte for byte). SQLite's declared collation is not read.
 */
async function requireExactIds(db: Kysely<any>, family: DialectFamily, table: string): Promise<void> {
  const [schema, name] = table.includes('.') ? table.split('.') : [undefined, table]
  let folding: string[] = []
  if (family === 'mysql') {
    const { rows } = await sql<{
      column_name: unknown
      collation_name: unknown
    }>`SELECT COLUMN_NAME AS column_name,
  COLLATION_NAME AS collation_name FROM information_schema.COLUMNS
WHERE TABLE_SCHEMA = COALESCE(${schema ?? null}, DATABASE()) AND TABLE_NAME = ${name}
  AND COLUMN_NAME IN ('work_id', 'holder') ORDER BY COLUMN_NAME DESC LIMIT 2`.execute(db)
    folding = rows
      .filter((row) => row.collation_name !== null && !/_(0900|nopad)_bin$/.test(String(row.collation_name)))
      .map((row) => `${row.column_name} (${row.collation_name})`)
  } else if (family === 'postgres') {
    const quoted = table
      .split('.')
      .map((part) => `"${part}"`)
      .join('.')
    const { rows } = await sql<{ attname: string; collname: string }>`SELECT a.attname, c.collname
FROM pg_attribute a JOIN pg_collation c ON c.oid = a.attcollation
WHERE a.attrelid = to_regclass(${quoted}) AND a.attname IN ('work_id', 'holder') AND NOT a.attisdropped
  AND NOT c.collisdeterministic ORDER BY a.attname DESC`.execute(db)
    folding = rows.map((row) => `${row.attname} (collation ${row.collname})`)
  }
  if (folding.length > 0) {
    throw new Error(
      `the lease table ${table} compares ids under a collation that folds them: ${folding.join(', ')}; two ids it calls equal would share one lease. Make them ${family === 'mysql' ? 'VARBINARY(1020)' : 'varchar(255) COLLATE "C"'}, as createLeaseTable does`,
    )
  }
}

async function hasCheckpointSeq(db: Kysely<any>, family: DialectFamily, table: string): Promise<boolean> {
  const [schema, name] = table.includes('.') ? table.split('.') : [undefined, table]
  switch (family) {
    case 'postgres': {
      // to_regclass resolves the name as the statements do (search_path, quoted identifiers).
      const quoted = table
        .split('.')
        .map((part) => `"${part}"`)
        .join('.')
      const { rows } = await sql`SELECT 1 AS found FROM pg_attribute
WHERE attrelid = to_regclass(${quoted}) AND attname = 'checkpoint_seq' AND NOT attisdropped`.execute(db)
      return rows.length > 0
    }
    case 'mysql': {
      const { rows } = await sql`SELECT 1 AS found FROM information_schema.COLUMNS
WHERE TABLE_SCHEMA = COALESCE(${schema ?? null}, DATABASE()) AND TABLE_NAME = ${name}
  AND COLUMN_NAME = 'checkpoint_seq' LIMIT 1`.execute(db)
      return rows.length > 0
    }
    case 'sqlite': {
      const { rows } = await sql`SELECT 1 AS found FROM pragma_table_info(${name}, ${schema ?? 'main'})
WHERE name = 'checkpoint_seq'`.execute(db)
      return rows.length > 0
    }
  }
}
