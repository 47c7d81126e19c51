import { InvalidArgumentError } from '@worklease/spec'
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
  try {
    const { table, dialect, ifNotExists } = options as LeaseTableOptions
    return { table, dialect, ifNotExists }
  } catch (error) {
    throw new InvalidArgumentError('options could not be read', { cause: error })
  }
}
