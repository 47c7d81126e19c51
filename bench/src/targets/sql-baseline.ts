import { type Kysely, type QueryResult, type RawBuilder, sql } from 'kysely'
import { type BaselineLease, type LeaseOps, LostLeaseError } from '../lease-ops.js'

export type SqlFlavour = 'postgres' | 'mariadb' | 'sqlite'

// The server clock in epoch milliseconds and the literals, exactly as @worklease/kysely writes them
// (its lease-statements.ts), so both sides send byte-identical SQL.
const NOW: Record<SqlFlavour, string> = {
  postgres: 'floor(extract(epoch from clock_timestamp()) * 1000)::bigint',
  mariadb: "(TIMESTAMPDIFF(MICROSECOND, '1970-01-01 00:00:00', UTC_TIMESTAMP(6)) DIV 1000)",
  sqlite: "CAST(ROUND((julianday('now') - 2440587.5) * 86400000.0) AS INTEGER)",
}

/**
 * The statements a careful developer would write by hand for a lease table made by
 * `createLeaseTable`, sent through the same Kysely instance as the driver: one conditional upsert to
 * acquire, one conditional UPDATE per other call, checked by affected rows. No validation, no
 * record objects, no error classes. On MariaDB an UPDATE that rewrote identical values reports 0
 * changed rows, so, like the driver, checkpoint and renew then read the row once to tell a landed
 * write from a lost lease (a hand-writer faces the same protocol).
 *
 * ```ts
 * const ops = sqlBaseline(db, 'postgres', 'bench_baseline')
 * ```
 */
export function sqlBaseline(db: Kysely<any>, flavour: SqlFlavour, table: string): LeaseOps<BaselineLease> {
  const t = sql.table(table)
  const now = sql.raw(NOW[flavour])
  const yes = sql.raw(flavour === 'postgres' ? 'true' : '1')
  const no = sql.raw(flavour === 'postgres' ? 'false' : '0')
  const bigint = sql.raw(flavour === 'postgres' ? 'bigint' : flavour === 'mariadb' ? 'SIGNED' : 'INTEGER')
  const text = sql.raw(flavour === 'postgres' ? 'text' : flavour === 'mariadb' ? 'CHAR' : 'TEXT')
  const least = sql.raw(flavour === 'sqlite' ? 'MIN' : 'LEAST')
  const valid = (held: BaselineLease) =>
    sql`work_id = ${held.workId} AND token = CAST(${held.token.toString()} AS ${bigint}) AND holder = ${held.holderId} AND released = ${no}`
  const run = <R>(query: RawBuilder<R>): Promise<QueryResult<R>> => query.execute(db)
  const liveness = (held: BaselineLease) =>
    run(sql<{ live: unknown }>`SELECT CASE WHEN expires_at > ${now} THEN 1 ELSE 0 END AS live
FROM ${t} WHERE ${valid(held)}`)
  const changed = (result: QueryResult<unknown>) => (result.numAffectedRows ?? 0n) > 0n

  type Acquired = { token: string; expires_at: string; acquired?: unknown }
  const acquireSql =
    flavour === 'mariadb'
      ? (workId: string, holderId: string, ttlMs: number) => {
          const free = sql`(released <> 0 OR expires_at <= ${now})`
          return sql<Acquired>`INSERT INTO ${t} (work_id, token, holder, expires_at, released, clean_handoff)
VALUES (${workId}, LAST_INSERT_ID(1), ${holderId}, ${now} + ${ttlMs}, 0, 1)
ON DUPLICATE KEY UPDATE
  token = IF(${free}, LAST_INSERT_ID(token + 1), token + LAST_INSERT_ID(0)),
  holder = IF(${free}, ${holderId}, holder),
  clean_handoff = IF(${free}, released, clean_handoff),
  expires_at = IF(${free}, ${now} + ${ttlMs}, expires_at),
  released = 0
RETURNING CAST(token AS CHAR) AS token, CAST(expires_at AS CHAR) AS expires_at, LAST_INSERT_ID() AS acquired`
        }
      : (workId: string, holderId: string, ttlMs: number) =>
          sql<Acquired>`INSERT INTO ${t} AS l (work_id, token, holder, expires_at, released, clean_handoff)
VALUES (${workId}, 1, ${holderId}, ${now} + ${ttlMs}, ${no}, ${yes})
ON CONFLICT (work_id) DO UPDATE SET token = l.token + 1, holder = excluded.holder, expires_at = excluded.expires_at, released = ${no}, clean_handoff = l.released
WHERE l.released = ${yes} OR l.expires_at <= ${now}
RETURNING CAST(token AS ${text}) AS token, CAST(expires_at AS ${text}) AS expires_at`

  return {
    async acquire(workId, holderId, ttlMs) {
      const { rows } = await run(acquireSql(workId, holderId, ttlMs))
      const row = rows[0]
      if (!row || (flavour === 'mariadb' && BigInt(String(row.acquired)) === 0n)) return null
      return { workId, holderId, token: BigInt(row.token) }
    },
    async checkpoint(held, state, ttlMs) {
      const result = await run(sql`UPDATE ${t} SET state = ${state}, expires_at = ${now} + ${ttlMs}
WHERE ${valid(held)}`)
      if (changed(result)) return
      if (flavour === 'mariadb' && (await liveness(held)).rows.length > 0) return
      throw new LostLeaseError('checkpoint')
    },
    async renew(held, ttlMs) {
      const result = await run(sql`UPDATE ${t} SET expires_at = ${now} + ${ttlMs}
WHERE ${valid(held)} AND expires_at > ${now}`)
      if (changed(result)) return
      const row = (await liveness(held)).rows[0]
      if (!row || Number(row.live) !== 1) throw new LostLeaseError('renew')
    },
    async release(held) {
      const result =
        await run(sql`UPDATE ${t} SET released = ${yes}, expires_at = ${least}(expires_at, ${now} - 1)
WHERE ${valid(held)}`)
      if (!changed(result)) throw new LostLeaseError('release')
    },
  }
}
