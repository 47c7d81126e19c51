import { InvalidArgumentError } from '@worklease/spec'
import type { Kysely } from 'kysely'

/**
 * Checks that `db` is a Kysely instance (or transaction) as far as this package uses one: it runs
 * queries (`getExecutor`) and gives a copy without the caller's plugins (`withoutPlugins`). Anything
 * else would fail at its first statement with a TypeError, after other checks had passed.
 */
export function checkKysely(name: string, db: unknown): Kysely<any> {
  let usable = false
  try {
    usable =
      typeof db === 'object' &&
      db !== null &&
      typeof (db as Kysely<any>).getExecutor === 'function' &&
      typeof (db as Kysely<any>).withoutPlugins === 'function'
  } catch (cause) {
    throw new InvalidArgumentError(`${name} could not be read`, { cause })
  }
  if (!usable) throw new InvalidArgumentError(`${name} must be a Kysely instance`)
  return db as Kysely<any>
}
