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
 * at every start. `createLeaseTable` calls it too. Upgrade the table before any process runs the new
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
