import { type Kysely, type RawBuilder, sql } from 'kysely'

export type SqlFamily = 'postgres' | 'mysql' | 'sqlite'

/** One entry of an item's downstream history, in the order the database applied them. */
export type HistoryEntry =
  | { kind: 'claim'; token: bigint; worker: string }
  | { kind: 'write'; step: number; token: bigint; worker: string }

/**
 * Where workers deliver their results: the "downstream" system a real job would write to. It keeps,
 * per item, the highest fencing token it has seen (the fence) and the history of every claim and
 * write it accepted, in order. Both guards are one conditional UPDATE of the item's row, which every
 * one of the three databases applies atomically, so no read-then-write can let a stale token in.
 *
 * - `claim`: a new holder registers its token after it reads the checkpoint and before its first
 *   write; from then on, writes from any older token are refused, even before the new holder writes
 *   anything.
 * - `write`: lands only if its token is >= the fence.
 *
 * With `fence: false` (the demo's `--no-fence` negative control) writes skip the token check.
 */
export class Downstream {
  readonly #db: Kysely<any>
  readonly #family: SqlFamily
  readonly #table: string
  readonly #fence: boolean

  constructor(options: { db: Kysely<any>; family: SqlFamily; table: string; fence: boolean }) {
    this.#db = options.db
    this.#family = options.family
    this.#table = options.table
    this.#fence = options.fence
  }

  /** Creates the table with one row per item, fence 0 and an empty history. */
  async create(items: readonly string[]): Promise<void> {
    const table = sql.table(this.#table)
    const columns = {
      postgres: sql`item_id varchar(64) PRIMARY KEY, fence bigint NOT NULL, history text NOT NULL`,
      mysql: sql`item_id varchar(64) PRIMARY KEY, fence BIGINT NOT NULL, history MEDIUMTEXT NOT NULL`,
      sqlite: sql`item_id TEXT PRIMARY KEY, fence INTEGER NOT NULL, history TEXT NOT NULL`,
    }[this.#family]
    await sql`CREATE TABLE ${table} (${columns})`.execute(this.#db)
    const rows = items.map((item) => sql`(${item}, 0, '')`)
    await sql`INSERT INTO ${table} (item_id, fence, history) VALUES ${sql.join(rows)}`.execute(this.#db)
  }

  async drop(): Promise<void> {
    await sql`DROP TABLE IF EXISTS ${sql.table(this.#table)}`.execute(this.#db)
  }

  /** Registers a new holder's token; false if the fence is already at or past it. */
  claim(item: string, token: bigint, worker: string): Promise<boolean> {
    const entry = `c ${token} ${worker};`
    return this.#update(item, token, entry, sql`fence < ${this.#token(token)}`)
  }

  /** Delivers one step's result; false if the guard refused it (a newer token has been seen). */
  write(item: string, step: number, token: bigint, worker: string): Promise<boolean> {
    const entry = `w ${step} ${token} ${worker};`
    return this.#update(item, token, entry, this.#fence ? sql`fence <= ${this.#token(token)}` : undefined)
  }

  /** Every item's history, as the database applied it. */
  async histories(): Promise<Map<string, HistoryEntry[]>> {
    const { rows } = await sql<{ item_id: string; history: string }>`
      SELECT item_id, history FROM ${sql.table(this.#table)} ORDER BY item_id`.execute(this.#db)
    return new Map(rows.map((row) => [row.item_id, parseHistory(row.history)]))
  }

  async #update(item: string, token: bigint, entry: string, guard: RawBuilder<unknown> | undefined) {
    const t = this.#token(token)
    const history = this.#family === 'mysql' ? sql`CONCAT(history, ${entry})` : sql`history || ${entry}`
    // Without the guard the fence still only moves up, so the negative control differs by the guard alone.
    const fence = guard ? t : sql`CASE WHEN fence < ${t} THEN ${t} ELSE fence END`
    const where = guard ? sql`item_id = ${item} AND ${guard}` : sql`item_id = ${item}`
    const result =
      await sql`UPDATE ${sql.table(this.#table)} SET fence = ${fence}, history = ${history} WHERE ${where}`.execute(
        this.#db,
      )
    return result.numAffectedRows === 1n
  }

  // Tokens travel as decimal strings cast on the server: exact, whatever the driver does with bigint.
  #token(token: bigint): RawBuilder<unknown> {
    const text = token.toString()
    switch (this.#family) {
      case 'postgres':
        return sql`CAST(${text} AS bigint)`
      case 'mysql':
        return sql`CAST(${text} AS SIGNED)`
      case 'sqlite':
        return sql`CAST(${text} AS INTEGER)`
    }
  }
}

export function parseHistory(history: string): HistoryEntry[] {
  return history
    .split(';')
    .filter((entry) => entry.length > 0)
    .map((entry) => {
      const parts = entry.split(' ')
      if (parts[0] === 'c') return { kind: 'claim', token: BigInt(parts[1]!), worker: parts[2]! }
      return { kind: 'write', step: Number(parts[1]), token: BigInt(parts[2]!), worker: parts[3]! }
    })
}
