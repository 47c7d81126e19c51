import { InvalidArgumentError, readOnce } from '@worklease/spec'
import type { Kysely } from 'kysely'
import type { LeaseTableOptions } from './create-lease-table.js'

/**
 * The table helpers' arguments, checked before any statement: `db` a Kysely instance, and the
 * options an object read once (a getter cannot answer the check and the statement apart).
 */
export function readTableOptions(db: unknown, options: unknown): LeaseTableOptions {
  if (
    typeof db !== 'object' ||
    db === null ||
    typeof (db as Kysely<any>).getExecutor !== 'function' ||
    typeof (db as Kysely<any>).withoutPlugins !== 'function'
  ) {
    throw new InvalidArgumentError('db must be a Kysely instance')
  }
  if (options === undefined) return {}
  if (typeof options !== 'object' || options === null) {
    throw new InvalidArgumentError('options must be an object')
  }
  return readOnce(options, ['table', 'dialect', 'ifNotExists'], 'options') as LeaseTableOptions
}
