import { InvalidArgumentError, readOnce } from '@worklease/spec'
import type { LeaseTableOptions } from './create-lease-table.js'
import { checkKysely } from './kysely-instance.js'
import { LEASE_DIALECTS } from './lease-dialect.js'
import { DEFAULT_TABLE, validateTableName } from './table-name.js'

/**
 * The table helpers' arguments, checked before any statement: `db` a Kysely instance, and the
 * options an object read once (a getter cannot answer the check and the statement apart).
 */
export function readTableOptions(db: unknown, options: unknown): LeaseTableOptions {
  checkKysely('db', db)
  return readTableOptionsOnly(options)
}

/**
 * The table helpers' options alone (a migration gets its `db` later): an object, read once, and each
 * option checked (the table's name, the dialect, `ifNotExists`).
 */
export function readTableOptionsOnly(options: unknown): LeaseTableOptions {
  if (options === undefined) return {}
  if (typeof options !== 'object' || options === null) {
    throw new InvalidArgumentError('options must be an object')
  }
  const read = readOnce(options, ['table', 'dialect', 'ifNotExists'], 'options') as LeaseTableOptions
  validateTableName(read.table ?? DEFAULT_TABLE)
  // Checked for every helper, not only where used: a migration's `up` may run much later, and a
  // drop must not go ahead on options that are wrong.
  if (read.dialect !== undefined && !LEASE_DIALECTS.includes(read.dialect)) {
    throw new InvalidArgumentError(`dialect must be one of ${LEASE_DIALECTS.join(', ')}`)
  }
  if (read.ifNotExists !== undefined && typeof read.ifNotExists !== 'boolean') {
    throw new InvalidArgumentError('options.ifNotExists must be a boolean')
  }
  return read
}
