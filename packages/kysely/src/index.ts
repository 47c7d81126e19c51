export {
  type CreatedLeaseTable,
  createLeaseTable,
  createLeaseTableMigration,
  dropLeaseTable,
  type LeaseTableOptions,
} from './create-lease-table.js'
export { KyselyBackend, type KyselyBackendOptions } from './kysely-backend.js'
export type { DialectFamily, LeaseDialect } from './lease-dialect.js'
export {
  type FenceColumn,
  type FencedUpsert,
  type FenceRow,
  type FenceTable,
  SqlFence,
  type SqlFenceOptions,
} from './sql-fence.js'
export { DEFAULT_TABLE, validateTableName } from './table-name.js'
export { upgradeLeaseTable } from './upgrade-lease-table.js'
