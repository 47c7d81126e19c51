import { type Kysely, sql } from 'kysely'
import type { LeaseTableOptions } from './create-lease-table.js'
import type { DialectFamily } from './lease-dialect.js'
import { checkLeaseTable } from './lease-table-check.js'
import { familyOf } from './table-family.js'
import { DEFAULT_TABLE } from './table-name.js'
import { readTableOptions } from './table-options.js'

const COLUMN_TYPE: Record<DialectFamily, string> = {
  postgres: 'bigint NOT NULL DEFAULT 0',
  mysql: 'BIGINT NOT NULL DEFAULT 0',
  // SQLite's ADD COLUMN takes a CHECK (tested against the rows already there, since 3.37).
  sqlite: "INTEGER NOT NULL DEFAULT 0 CHECK (typeof(checkpoint_seq) = 'integer')",
}

/**
 * Brings a lease table created by an older `@worklease/kysely` up to date: adds the `checkpoint_seq`
 * column (ordered checkpoints) when it is missing, and does nothing otherwise, so it is safe to run
 * at every start. It first reads the table's columns and refuses, changing nothing, a table that is
 * no lease table (another of the same name) or one made by hand whose columns would break leases:
 * ids in a collation that folds them (MySQL's `utf8mb4` text, say: two ids it calls equal would share
 * one lease) or that orders them other than by code point (`list` would skip leases), padded id
 * types (`char`), a character set without every character, tokens narrower than 64 bits. `createLeaseTable` calls it too. Upgrade the table before any process runs the new
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
  const family = familyOf(db, dialect)
  const plain = db.withoutPlugins()
  // Look before altering: ALTER TABLE takes a lock every running lease statement would queue behind, and
  // PostgreSQL's ADD COLUMN IF NOT EXISTS takes it even when the column is there.
  const found = await checkLeaseTable(plain, family, table)
  if (!found.exists) throw new Error(`there is no table ${table} to upgrade: createLeaseTable creates it`)
  if (found.hasCheckpointSeq) return
  try {
    await sql`ALTER TABLE ${sql.table(table)} ADD COLUMN checkpoint_seq ${sql.raw(COLUMN_TYPE[family])}`.execute(
      plain,
    )
  } catch (error) {
    // Another process starting at the same moment may have added it first.
    if (!(await checkLeaseTable(plain, family, table)).hasCheckpointSeq) throw error
  }
}
