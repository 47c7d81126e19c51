import { FencedError, InvalidArgumentError, validateFencingToken } from '@worklease/spec'
import {
  AndNode,
  ColumnNode,
  type ColumnUpdateNode,
  IdentifierNode,
  type Kysely,
  type KyselyPlugin,
  type OperationNode,
  ParensNode,
  type RawBuilder,
  RawNode,
  ReferenceNode,
  type RootOperationNode,
  type SqlBool,
  sql,
  TableNode,
  type UpdateQueryBuilder,
  ValueNode,
  WhereNode,
} from 'kysely'
import { checkKysely } from './kysely-instance.js'
import { type DialectFamily, detectFamily, LEASE_DIALECTS, type LeaseDialect } from './lease-dialect.js'
import { validateColumnName, validateTableName } from './table-name.js'
import { tokenSql } from './token-sql.js'

/** `true` for `any`: a `Kysely<any>` gets today's untyped fence. */
type IsAny<T> = 0 extends 1 & T ? true : false

/**
 * A column of any table of `DB` (any string without a database type): what
 * {@link SqlFenceOptions.column} may name.
 *
 * ```ts
 * type Columns = FenceColumn<{ orders: { id: number; fencing_token: bigint | null } }> // 'id' | 'fencing_token'
 * ```
 */
export type FenceColumn<DB> =
  IsAny<DB> extends true ? string : { [T in keyof DB]: keyof DB[T] & string }[keyof DB]

/**
 * The tables of `DB` that have the fence column `C` (any string without a database type): what
 * {@link SqlFence.upsert} and {@link SqlFence.update} may write.
 *
 * ```ts
 * type Fenced = FenceTable<Database, 'fencing_token'> // 'orders', not 'audit_log' (no fencing_token)
 * ```
 */
export type FenceTable<DB, C extends string> =
  IsAny<DB> extends true
    ? string
    : { [T in keyof DB & string]: C extends keyof DB[T] ? T : never }[keyof DB & string]

/**
 * Some columns of table `T` of `DB`, each with any value (any record without a database type): the
 * shape of {@link FencedUpsert.key} and {@link FencedUpsert.values}, so a misspelled column is a
 * compile error.
 *
 * ```ts
 * const key: FenceRow<Database, 'orders'> = { id: 7 }
 * ```
 */
export type FenceRow<DB, T extends string> =
  IsAny<DB> extends true ? Record<string, unknown> : { [C in keyof DB[T & keyof DB]]?: unknown }

/**
 * `unknown` when the table the update `Q` writes (by its name or alias, in the query's own view of the
 * database) has the fence column `C`, else `never`, which refuses the argument: the fence cannot be
 * added to a table without its column. Without a database type every update passes.
 */
type OnFencedTable<Q, C extends string> =
  Q extends UpdateQueryBuilder<infer QDB, infer UT, any, any>
    ? IsAny<QDB> extends true
      ? unknown
      : C extends keyof QDB[UT]
        ? unknown
        : never
    : never

/** Options of {@link SqlFence}. */
export interface SqlFenceOptions<DB = any, C extends string = string> {
  /**
   * The column of your table that holds the highest fencing token written to each row: a nullable
   * `bigint` (PostgreSQL), `BIGINT` (MySQL/MariaDB) or `INTEGER` (SQLite). A row whose column is `NULL`
   * has never been written under a lease and accepts any token. Letters, digits and underscores, as
   * every name the fence writes (refused, never escaped). Default: `'fencing_token'`. With a
   * typed `Kysely<DB>`, a column of one of `DB`'s tables (a misspelling is a compile error), and only
   * the tables that have it can be written through the fence.
   *
   * ```ts
   * const fence = new SqlFence(db, { column: 'lease_token' })
   * ```
   */
  column?: IsAny<DB> extends true ? C : C & FenceColumn<DB>
  /**
   * The SQL flavour, as in {@link KyselyBackendOptions.dialect}. Default: detected from Kysely's dialect
   * adapter. `'mysql'` and `'mariadb'` produce the same statements here.
   *
   * ```ts
   * const fence = new SqlFence(db, { dialect: 'postgres' })
   * ```
   */
  dialect?: LeaseDialect
}

/**
 * What {@link SqlFence.upsert} writes. With a typed `Kysely<DB>`, `table` is one of `DB`'s tables that
 * has the fence column and `key` and `values` name its columns: a misspelling is a compile error.
 */
export interface FencedUpsert<DB = any, T extends string = string> {
  /**
   * Your table (optionally `schema.table`): letters, digits and underscores, as the lease table's
   * name; the columns of `key` and `values` too. Any other name is refused before anything is sent.
   *
   * ```ts
   * await fence.upsert({ table: 'orders', key: { id: 7 }, values: { total: 42 }, token })
   * ```
   */
  table: T
  /**
   * The row's key: the columns of its primary key or of a unique index (PostgreSQL and SQLite name them
   * as the conflict target; MySQL uses whichever unique key the insert collides with). Inserted with
   * the row, never updated.
   *
   * ```ts
   * await fence.upsert({ table: 'order_lines', key: { order_id: 7, line: 2 }, values: { qty: 3 }, token })
   * ```
   */
  key: FenceRow<DB, T>
  /**
   * The other columns to write, inserted or updated. The fence column is written by the fence: under its
   * exact name in `values` (a whole row passed as it is) it is left out, and the token written. No other
   * column may appear twice among `key`, `values` and the fence column, in any case (SQLite and MySQL
   * fold a column name's case) or through a plugin that renames columns (`CamelCasePlugin`): such a
   * write is refused before anything is sent, since the database would take one of the two values and
   * might judge the fence by the caller's.
   *
   * ```ts
   * await fence.upsert({ table: 'orders', key: { id: 7 }, values: { total: 42, status: 'paid' }, token })
   * ```
   */
  values: FenceRow<DB, T>
  /**
   * The writer's fencing token (`record.fencingToken`), an exact `bigint` in `1n..2n ** 63n - 1n`.
   *
   * ```ts
   * await fence.upsert({ table: 'orders', key: { id: 7 }, values: { total: 42 }, token: lease.fencingToken })
   * ```
   */
  token: bigint
  /**
   * The Kysely instance or transaction to run on. Default: the one the fence was created with.
   *
   * ```ts
   * await db.transaction().execute((trx) => fence.upsert({ db: trx, table: 'orders', key: { id: 7 }, values: {}, token }))
   * ```
   */
  db?: Kysely<DB>
}

/**
 * Guards writes to your own tables with fencing tokens, so a paused or partitioned former holder can
 * never overwrite its successor's work. A write lands only when its token is at least the highest token
 * already stored in the row (`>=`: a holder writes many times under one token), and the same statement
 * raises the stored token: the check and the write are one atomic step, never a read then a write.
 *
 * **The fence is per row.** Each row remembers the highest token written to it, and knows nothing of
 * the others: an update that matches several rows lands on every row the successor has not written
 * yet, skips the ones it has, and reports `true`. When a unit of work spans rows, fence the unit through
 * one guard row (say, one per workId): in one transaction, raise its fence first with
 * `upsertOrThrow`, then write the rows. A stale holder's guard write is refused and its transaction
 * rolls back whole; the row lock on the guard makes concurrent holders of one unit take turns. (A
 * unit fence in the same statement as the write is not possible on SQLite, where an `UPDATE` writes
 * one table.)
 *
 * Tokens travel as decimal text and are `CAST` on the server, as the lease statements do, so tokens
 * above 2^53 compare exactly on every database.
 *
 * Given a typed `Kysely<DB>`, the fence is typed by it: the fence column must be a column of `DB`, and
 * `upsert` and `update` accept only the tables that have it, with `key` and `values` checked column by
 * column. With `Kysely<any>` every name is a plain string, as before.
 *
 * ```ts
 * import { SqlFence } from '@worklease/kysely'
 *
 * const fence = new SqlFence(db) // column fencing_token, SQL flavour detected
 * const landed = await fence.update(
 *   db.updateTable('orders').set({ total: 42 }).where('id', '=', 7),
 *   lease.fencingToken,
 * )
 * if (!landed) return // a newer holder has written: stop working on this unit
 * ```
 */
export class SqlFence<DB = any, C extends string = 'fencing_token'> {
  /** The fence column's name. */
  readonly column: C
  /** The SQL family in use: `'postgres'`, `'mysql'` (MySQL and MariaDB) or `'sqlite'`. */
  readonly family: DialectFamily
  readonly #db: Kysely<any>
  /** MySQL family: whether the server takes a row alias in upserts (MySQL >= 8.0.19; not MariaDB). */
  #rowAlias: Promise<boolean> | undefined

  constructor(db: Kysely<DB>, options: SqlFenceOptions<DB, C> = {}) {
    checkKysely('db', db)
    if (typeof options !== 'object' || options === null) {
      throw new InvalidArgumentError('options must be an object')
    }
    let read: SqlFenceOptions<DB, C>
    try {
      const { column, dialect } = options
      read = { column, dialect } as SqlFenceOptions<DB, C>
    } catch (error) {
      throw new InvalidArgumentError('options could not be read', { cause: error })
    }
    const { column = 'fencing_token', dialect } = read
    validateColumnName(column, 'options.column')
    if (dialect !== undefined && !LEASE_DIALECTS.includes(dialect)) {
      throw new InvalidArgumentError(`options.dialect must be one of ${LEASE_DIALECTS.join(', ')}`)
    }
    const family =
      dialect === undefined ? detectFamily(db) : dialect === 'mariadb' ? 'mysql' : (dialect as DialectFamily)
    if (!family) {
      throw new InvalidArgumentError(
        `cannot tell the SQL flavour of this Kysely dialect; pass options.dialect (${LEASE_DIALECTS.join(', ')})`,
      )
    }
    this.column = column as C
    this.family = family
    this.#db = db as Kysely<any>
    if (dialect === 'mariadb') this.#rowAlias = Promise.resolve(false)
  }

  /**
   * The where-clause of a fenced write: `(column IS NULL OR column <= token)`. Pair it with
   * `set({ [column]: fence.value(token) })` in the same statement, or use {@link SqlFence.update}, which
   * adds both.
   *
   * ```ts
   * const result = await db
   *   .updateTable('orders')
   *   .set({ total: 42, fencing_token: fence.value(token) })
   *   .where('id', '=', 7)
   *   .where(fence.condition(token))
   *   .executeTakeFirst()
   * const landed = result.numUpdatedRows > 0n
   * ```
   */
  condition(token: bigint): RawBuilder<SqlBool> {
    const column = sql.ref(this.column)
    return sql<SqlBool>`(${column} IS NULL OR ${column} <= ${this.value(token)})`
  }

  /**
   * The token as an exact SQL value (`CAST('<decimal>' AS BIGINT)` in the database's spelling), for
   * `set` or `values`.
   *
   * ```ts
   * db.updateTable('orders').set({ fencing_token: fence.value(token) })
   * ```
   */
  value<T = any>(token: bigint): RawBuilder<T> {
    return tokenSql(this.family, checkToken(token)) as RawBuilder<T>
  }

  /**
   * Adds the fence to an update (the condition, and the fence column raised to `token`), runs it, and
   * says whether it landed: `false` when no row matched, because a newer token has written or because
   * the row does not exist (use {@link SqlFence.upsert} to create rows). Row by row: an update of
   * several rows lands on each one whose own fence allows it and is `true` if any did; fence a unit
   * that spans rows through a guard row (see {@link SqlFence}).
   *
   * On MySQL/MariaDB the count is of matched rows only while the connection reports found rows (mysql2
   * does by default); without it, a same-token rewrite of identical values counts 0 and reads as fenced.
   *
   * The query's own where-clause is kept whole, in parentheses, beside the fence's, so raw SQL with a
   * top-level `OR` cannot leave rows unfenced. A query with `returning` is refused (`INVALID_ARGUMENT`,
   * before anything is sent): its rows would replace the count that says whether the write landed.
   * So is a statement that assigns a column twice, the fence column above all, as Kysely compiles it
   * (after every plugin: one that adds its own assignment counts). A builder that does not run its
   * plugins (a Proxy that drops them) cannot be fenced this way.
   *
   * ```ts
   * const landed = await fence.update(db.updateTable('orders').set({ total: 42 }).where('id', '=', 7), token)
   * ```
   */
  async update<Q extends UpdateQueryBuilder<any, any, any, any>>(
    query: Q & OnFencedTable<Q, C>,
    token: bigint,
  ): Promise<boolean> {
    const tokenValue = this.value(token)
    // The caller's builder is read once (its set()); what it would run is checked in a plugin on the
    // node Kysely compiles, so a builder cannot show the check one statement and send another.
    const set = readUpdateSet(query)
    const result = await (set(sql.ref(this.column), tokenValue) as UpdateQueryBuilder<any, any, any, any>)
      .where(this.condition(token))
      .withPlugin(fencedUpdatePlugin(this.column, this.family, checkToken(token)))
      .executeTakeFirst()
    return (result.numUpdatedRows ?? 0n) > 0n
  }

  /**
   * {@link SqlFence.update} that throws `FencedError` (code `FENCED`) instead of returning `false`.
   *
   * ```ts
   * await fence.updateOrThrow(db.updateTable('orders').set({ total: 42 }).where('id', '=', 7), token)
   * ```
   */
  async updateOrThrow<Q extends UpdateQueryBuilder<any, any, any, any>>(
    query: Q & OnFencedTable<Q, C>,
    token: bigint,
  ): Promise<void> {
    if (!(await this.update(query, token))) {
      throw new FencedError(
        'the fenced update matched no row: a newer fencing token has written, or the row does not exist',
      )
    }
  }

  /**
   * Inserts the row, or updates it when its key exists and its stored token is at most `token`, in one
   * statement; says whether the write landed (`false`: a newer token has written, nothing changed).
   * A key or value that is `undefined` or a symbol is refused (`InvalidArgumentError`): pass `null`
   * to store NULL.
   *
   * - PostgreSQL, SQLite: `INSERT ... ON CONFLICT (key) DO UPDATE SET col = excluded.col, ...
   *   WHERE table.fence IS NULL OR table.fence <= excluded.fence`.
   * - MySQL/MariaDB: `ON DUPLICATE KEY UPDATE` has no WHERE, so each column becomes
   *   `IF(fenced-ok, VALUES(col), col)`, with the fence column assigned last because MySQL evaluates
   *   assignments left to right and the condition reads it. The outcome comes back through
   *   `LAST_INSERT_ID(1 or 0)` in the same reply. MySQL 8.0.19+ deprecates `VALUES(col)` there, so
   *   on it the row is aliased (`VALUES (...) AS incoming`) and read as `incoming.col`; the first
   *   upsert of a fence asks the server's version once (none with `dialect: 'mariadb'`). Tested on
   *   MariaDB 10.11 and MySQL 9.7, with and without an `AUTO_INCREMENT` column.
   *
   * ```ts
   * const landed = await fence.upsert({ table: 'orders', key: { id: 7 }, values: { total: 42 }, token })
   * ```
   */
  async upsert<T extends FenceTable<DB, C>>(write: FencedUpsert<DB, T>): Promise<boolean> {
    const { table, key, values, token, db: given } = readWrite(write as FencedUpsert)
    validateTableName(table)
    if (Object.keys(key).length === 0) throw new InvalidArgumentError('key must name at least one column')
    const keyColumns = Object.keys(key)
    // The fence column under its exact name is the fence's own to write (documented as added by it).
    const valueColumns = Object.keys(values).filter((column) => column !== this.column)
    for (const column of keyColumns) validateColumnName(column, 'a key column')
    for (const column of valueColumns) validateColumnName(column, 'a values column')
    const tokenValue = this.value(token as bigint)
    const db = given === undefined ? this.#db : checkKysely('write.db', given)
    // As the database will name them, after any plugin (CamelCasePlugin renames): compiled, not sent.
    refuseRepeatedColumns(
      db
        .insertInto(table)
        .values({ ...key, ...pick(values, valueColumns), [this.column]: tokenValue })
        .compile().query,
    )
    if (this.family === 'mysql') {
      const rowAlias = await this.#usesRowAlias(db)
      const incoming = (column: string) =>
        rowAlias ? sql.ref(`${ROW_ALIAS}.${column}`) : sql`VALUES(${sql.ref(column)})`
      // Beside a row alias of the same columns, a bare column name is ambiguous: name the table.
      const stored = (column: string) => sql.ref(rowAlias ? `${table}.${column}` : column)
      const old = stored(this.column)
      const ok = sql`(${old} IS NULL OR ${old} <= ${incoming(this.column)})`
      // Built from entries, never by assignment: a column named __proto__ would set the prototype.
      const set = Object.fromEntries([
        ...valueColumns.map((column) => [column, sql`IF(${ok}, ${incoming(column)}, ${stored(column)})`]),
        // Last, so every IF above still reads the old fence. LAST_INSERT_ID(1) in VALUES marks an
        // insert; on a duplicate the update's LAST_INSERT_ID(1 or 0) replaces it, as the lease's
        // acquire does.
        [
          this.column,
          sql`IF(${ok}, IF(LAST_INSERT_ID(1), ${incoming(this.column)}, NULL), ${old} + LAST_INSERT_ID(0))`,
        ],
      ])
      const row: Record<string, unknown> = {
        ...key,
        ...pick(values, valueColumns),
        [this.column]: sql`IF(LAST_INSERT_ID(1), ${tokenValue}, NULL)`,
      }
      // Kysely has no row alias: the VALUES list is spelled out with it.
      const insert = rowAlias
        ? db
            .insertInto(table)
            .columns(Object.keys(row) as any)
            .expression(sql`VALUES (${sql.join(Object.values(row))}) AS ${sql.raw(ROW_ALIAS)}` as any)
        : db.insertInto(table).values(row)
      const result = await insert.onDuplicateKeyUpdate(set).executeTakeFirst()
      return result.insertId !== undefined && BigInt(result.insertId) !== 0n
    }
    const table_ = sql.ref(`${table}.${this.column}`)
    const result = await db
      .insertInto(table)
      .values({ ...key, ...pick(values, valueColumns), [this.column]: tokenValue })
      .onConflict((conflict) =>
        conflict
          .columns(keyColumns as any)
          .doUpdateSet((eb) =>
            Object.fromEntries(
              [...valueColumns, this.column].map((column) => [column, eb.ref(`excluded.${column}`)]),
            ),
          )
          .where(sql<SqlBool>`(${table_} IS NULL OR ${table_} <= ${sql.ref(`excluded.${this.column}`)})`),
      )
      .executeTakeFirst()
    return (result.numInsertedOrUpdatedRows ?? 0n) > 0n
  }

  // One version query per fence, shared by concurrent first upserts; a failed one is asked again.
  #usesRowAlias(db: Kysely<any>): Promise<boolean> {
    this.#rowAlias ??= sql<{ version: string }>`SELECT VERSION() AS version LIMIT 1`.execute(db).then(
      ({ rows }) => takesRowAlias(String(rows[0]?.version ?? '')),
      (error: unknown) => {
        this.#rowAlias = undefined
        throw error
      },
    )
    return this.#rowAlias
  }

  /**
   * {@link SqlFence.upsert} that throws `FencedError` (code `FENCED`) instead of returning `false`.
   *
   * ```ts
   * await fence.upsertOrThrow({ table: 'orders', key: { id: 7 }, values: { total: 42 }, token })
   * ```
   */
  async upsertOrThrow<T extends FenceTable<DB, C>>(write: FencedUpsert<DB, T>): Promise<void> {
    if (!(await this.upsert(write))) {
      throw new FencedError('the fenced upsert was refused: a newer fencing token has written this row')
    }
  }
}

const ROW_ALIAS = 'incoming'

/** MySQL 8.0.19 brought the row alias of `INSERT ... VALUES (...) AS alias`; MariaDB has none. */
function takesRowAlias(version: string): boolean {
  if (/mariadb/i.test(version)) return false
  const [major = 0, minor = 0, patch = 0] = (/^(\d+)\.(\d+)\.(\d+)/.exec(version) ?? []).slice(1).map(Number)
  return major > 8 || (major === 8 && (minor > 0 || patch >= 19))
}

const NOT_AN_UPDATE = 'a fenced update takes a Kysely updateTable() query'

/** The caller's `set`, read once, bound to the builder it came from. */
function readUpdateSet(query: unknown): (column: unknown, value: unknown) => unknown {
  let set: unknown
  try {
    set = (query as { set?: unknown } | null | undefined)?.set
  } catch (cause) {
    throw new InvalidArgumentError(`${NOT_AN_UPDATE}, and this one cannot be read`, { cause })
  }
  if (typeof set !== 'function') throw new InvalidArgumentError(NOT_AN_UPDATE)
  return (column, value) => set.call(query, column, value)
}

/**
 * Checks the statement {@link SqlFence.update} is about to send, as Kysely compiles it (after every
 * plugin, the caller's and the db's, which may add assignments of their own), and wraps what the
 * caller's query had in its where-clause in parentheses beside the fence's condition, which the fence
 * appends last: Kysely joins where-clauses with a bare `and`, and raw SQL such as `id = 1 OR id = 2`
 * would otherwise leave `id = 1` unfenced.
 */
function fencedUpdatePlugin(column: string, family: DialectFamily, token: string): KyselyPlugin {
  // SQLite and MySQL fold a name's case; PostgreSQL keeps a quoted one as it is.
  const fold = (name: string) => (family === 'postgres' ? name : name.toLowerCase())
  return {
    transformQuery({ node }): RootOperationNode {
      if (node.kind !== 'UpdateQueryNode' || !node.updates?.length || !node.where) {
        throw new InvalidArgumentError(NOT_AN_UPDATE)
      }
      // The fence sets its column itself; a second assignment is an error on PostgreSQL (after a round
      // trip) and, elsewhere, one of the two silently wins. Whoever added it (the caller's set(), a
      // plugin), the fence column assigned twice, in any spelling, in any table's name, is refused:
      // by the name the fence was given, and by the name its own assignment has after the plugins
      // (CamelCasePlugin renames it). So is any other column of one table assigned twice.
      const own = node.updates.find((update) => isFenceAssignment(update, token))
      const ownName = own && assignedTarget(own.column)?.column
      const fenceNames = [column, ...(ownName === undefined ? [] : [ownName])].map((name) =>
        name.toLowerCase(),
      )
      const target = node.table && TableNode.is(node.table) ? node.table.table.identifier.name : ''
      let fenceAssignments = 0
      const assigned = new Set<string>()
      for (const update of node.updates) {
        const assignedTo = assignedTarget(update.column)
        const isFence =
          assignedTo === undefined
            ? mentions(update.column, fenceNames)
            : fenceNames.includes(assignedTo.column.toLowerCase())
        if (isFence) {
          if (++fenceAssignments > 1) {
            throw new InvalidArgumentError(
              `a fenced update must not set ${JSON.stringify(column)}: the fence writes the token there itself`,
            )
          }
          continue
        }
        if (assignedTo === undefined) continue
        // An unqualified column is the target table's (when there is one table).
        const key = fold(`${assignedTo.table ?? target}.${assignedTo.column}`)
        if (assigned.has(key)) {
          throw new InvalidArgumentError(
            `a fenced update sets ${JSON.stringify(assignedTo.column)} twice (a plugin's assignment counts too)`,
          )
        }
        assigned.add(key)
      }
      if (node.returning) {
        throw new InvalidArgumentError(
          'a fenced update takes no returning(): it reads the updated-row count to tell whether the write landed',
        )
      }
      const both = node.where.where
      if (!AndNode.is(both)) return node
      return Object.freeze({
        ...node,
        where: WhereNode.create(AndNode.create(ParensNode.create(both.left), both.right)),
      })
    },
    transformResult: async ({ result }) => result,
  }
}

/** The fence's own assignment, as the plugins left it: a lone reference, set to `CAST(<token> AS ...)`. */
function isFenceAssignment(update: ColumnUpdateNode, token: string): boolean {
  const { column, value } = update
  return (
    RawNode.is(column) &&
    column.sqlFragments.every((part) => part === '') &&
    RawNode.is(value) &&
    value.sqlFragments[0] === 'CAST(' &&
    value.parameters[0] !== undefined &&
    ValueNode.is(value.parameters[0]) &&
    value.parameters[0].value === token
  )
}

/**
 * The column an assignment names, and its table where it says one: a column (`set({ total })`), a
 * reference (`set('orders.total', ...)`), an identifier, or one of these alone in raw SQL (`sql.ref`,
 * as the fence writes its own; `sql.id`; a bare or quoted name, `` sql`fencing_token` ``).
 */
function assignedTarget(node: OperationNode): { table?: string; column: string } | undefined {
  if (ColumnNode.is(node)) return { column: node.column.name }
  if (IdentifierNode.is(node)) return { column: node.name }
  if (ReferenceNode.is(node)) {
    if (!ColumnNode.is(node.column)) return undefined
    const table = node.table?.table.identifier.name
    return table === undefined
      ? { column: node.column.column.name }
      : { table, column: node.column.column.name }
  }
  if (!RawNode.is(node)) return undefined
  const text = node.sqlFragments.join('').trim()
  if (node.parameters.length === 1 && text === '') return assignedTarget(node.parameters[0]!)
  const bare = node.parameters.length === 0 ? /^(["`]?)([A-Za-z_][\w$]*)\1$/.exec(text) : null
  return bare ? { column: bare[2]! } : undefined
}

/**
 * Whether raw SQL this module cannot read whole names one of `names` (lower case): as a word of its
 * text, or as a name among its parts (`` sql`${sql.table(t)}.${sql.id('fencing_token')}` ``). Refused
 * then, rather than guessed.
 */
function mentions(node: OperationNode, names: readonly string[]): boolean {
  if (!RawNode.is(node)) {
    const named = assignedTarget(node)
    return named !== undefined && names.includes(named.column.toLowerCase())
  }
  const text = node.sqlFragments.join(' ').toLowerCase()
  return (
    names.some((name) => new RegExp(`(^|[^\\w$])${escapeRegExp(name)}($|[^\\w$])`).test(text)) ||
    node.parameters.some((part) => mentions(part, names))
  )
}

function escapeRegExp(text: string): string {
  return text.replace(/[.*+?^${}()|[\]\\]/g, '\\$&')
}

/** The upsert's write, each property and each column read once (a getter or Proxy could change). */
function readWrite(write: FencedUpsert): {
  table: unknown
  key: Record<string, unknown>
  values: Record<string, unknown>
  token: unknown
  db: unknown
} {
  if (typeof write !== 'object' || write === null)
    throw new InvalidArgumentError('the write must be an object')
  let read: { table: unknown; key: unknown; values: unknown; token: unknown; db: unknown }
  try {
    const { table, key, values, token, db } = write
    read = { table, key, values, token, db }
  } catch (error) {
    throw new InvalidArgumentError('the write could not be read', { cause: error })
  }
  return { ...read, key: columnsOf(read.key, 'key'), values: columnsOf(read.values, 'values') }
}

function columnsOf(value: unknown, name: string): Record<string, unknown> {
  if (typeof value !== 'object' || value === null) throw new InvalidArgumentError(`${name} must be an object`)
  let columns: Record<string, unknown>
  try {
    columns = Object.fromEntries(Object.entries(value))
  } catch (error) {
    throw new InvalidArgumentError(`${name} could not be read`, { cause: error })
  }
  for (const [column, given] of Object.entries(columns)) {
    // Kysely leaves an undefined column out of the INSERT, so a key would fall to the column's default
    // (another row) and a value would be overwritten by it; a symbol would be stored as its text.
    if (given === undefined || typeof given === 'symbol') {
      throw new InvalidArgumentError(
        `${name}.${column} is ${typeof given}: give a value, or null to store NULL`,
      )
    }
  }
  return columns
}

/** SQLite and MySQL fold a column name's case: two spellings of one column are one column twice. */
function refuseRepeatedColumns(insert: RootOperationNode): void {
  if (insert.kind !== 'InsertQueryNode') return
  const seen = new Map<string, string>()
  for (const { column } of insert.columns ?? []) {
    const folded = column.name.toLowerCase()
    const earlier = seen.get(folded)
    if (earlier !== undefined) {
      throw new InvalidArgumentError(
        `the upsert names one column twice, as ${JSON.stringify(earlier)} and ${JSON.stringify(column.name)}: key, values and the fence column must not overlap`,
      )
    }
    seen.set(folded, column.name)
  }
}

function pick(values: Record<string, unknown>, columns: string[]): Record<string, unknown> {
  return Object.fromEntries(columns.map((column) => [column, values[column]]))
}

/** The token as decimal text, after checking it is a fencing token at all. */
function checkToken(token: unknown): string {
  validateFencingToken(token)
  return token.toString()
}
