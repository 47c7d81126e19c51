import { InvalidArgumentError } from '@worklease/spec'
import type { Kysely } from 'kysely'
import {
  type DialectFamily,
  detectFamily,
  LEASE_DIALECTS,
  type LeaseDialect,
  resolveDialect,
} from './lease-dialect.js'

/** The statement family for the table helpers: the `dialect` option, else detected from the adapter. */
export function familyOf(db: Kysely<any>, dialect: LeaseDialect | undefined): DialectFamily {
  if (dialect !== undefined) {
    if (!LEASE_DIALECTS.includes(dialect)) {
      throw new InvalidArgumentError(`dialect must be one of ${LEASE_DIALECTS.join(', ')}`)
    }
    return resolveDialect(dialect).family
  }
  const family = detectFamily(db)
  if (!family)
    throw new InvalidArgumentError(`cannot tell the SQL flavour; pass dialect (${LEASE_DIALECTS.join(', ')})`)
  return family
}
