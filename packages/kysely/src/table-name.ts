import { InvalidArgumentError } from '@worklease/spec'

/** The table {@link KyselyBackend} and {@link createLeaseTable} use unless told otherwise. */
export const DEFAULT_TABLE = 'worklease_leases'

// Letters, digits and underscores, optionally schema-qualified: every server accepts these quoted or not,
// and 63 characters fit PostgreSQL's limit. Anything else is refused rather than escaped.
const IDENTIFIER = /^[A-Za-z_][A-Za-z0-9_]{0,62}$/

/** Checks a table name (`leases` or `schema.leases`) so it can be quoted into SQL safely. */
export function validateTableName(table: unknown, name = 'table'): asserts table is string {
  if (typeof table !== 'string') throw new InvalidArgumentError(`${name} must be a string`)
  const parts = table.split('.')
  if (parts.length > 2 || !parts.every((part) => IDENTIFIER.test(part))) {
    throw new InvalidArgumentError(
      `${name} must be an identifier of letters, digits and underscores (optionally schema.table), got ${JSON.stringify(table)}`,
    )
  }
}

/** Checks a column name by the same rule as a table's, unqualified. */
export function validateColumnName(column: unknown, name: string): asserts column is string {
  if (typeof column !== 'string' || !IDENTIFIER.test(column)) {
    throw new InvalidArgumentError(
      `${name} must be a column name of letters, digits and underscores, got ${typeof column === 'string' ? JSON.stringify(column) : typeof column}`,
    )
  }
}
