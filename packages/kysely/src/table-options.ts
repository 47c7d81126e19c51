import { InvalidArgumentError, readOnce } from '@worklease/spec'
import type { LeaseTableOptions } from './create-lease-table.js'
import { checkKysely } from './kysely-instance.js'

/**
 * The table helpers' arguments, checked before any statement: `db` a Kysely instance, and the
 * options an object read once (a getter cannot answer the check and the statement apart).
 */
export function readTableOptions(db: unknown, options: unknown): LeaseTableOptions {
  checkKysely('db', db)
  return readTableOptionsOnly(options)
}

/** The table helpers' options alone (a migration gets its `db` later): an object, read once. */
export function readTableOptionsOnly(options: unknown): LeaseTableOptions {
  if (options === undefined) return {}
  if (typeof options !== 'object' || options === null) {
    throw new InvalidArgumentError('options must be an object')
  }
  return readOnce(options, ['table', 'dialect', 'ifNotExists'], 'options') as LeaseTableOptions
}
