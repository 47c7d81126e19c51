import { type Kysely, type QueryResult, type RawBuilder, sql } from 'kysely'
import { type BaselineLease, type LeaseOps, LostLeaseError } from '../lease-ops.js'

export type SqlFlavour = 'postgres' | 'mariadb' | 'sqlite'

// The server clock in epoch milliseconds, exactly as @worklease/kysely writes it (lease-statements.ts).
const NOW: Record<SqlFlavour, string> = {
  postgres: 'floor(extract(epoch from clock_timestamp()) * 1000)::bigint',
  mariadb:
    "(CASE WHEN ABS(TIMESTAMPDIFF(SECOND, NOW(6), SYSDATE(6))) < 60 THEN (TIMESTAMPDIFF(MICROSECOND, '1970-01-01 00:00:00', SYSDATE(6)) - TIMESTAMPDIFF(MICROSECOND, UTC_TIMESTAMP(6), NOW(6))) DIV 1000 ELSE CAST(FLOOR(UNIX_TIMESTAMP(SYSDATE(6)) * 1000) AS SIGNED) END)",
  sqlite: "CAST(ROUND((julianday('now') - 2440587.5) * 86400000.0) AS INTEGER)",
}
const MAX_TOKEN = sql.raw('9223372036854775807')

/**
 * The statements @worklease/kysely sends in a lease cycle, copied from its lease-statements.ts and
 * written by hand, sent through the same Kysely instance as the driver: the conditional upsert that
 * takes a lease (on PostgreSQL with the branch that names the holder in the way), the ordered
 * checkpoint, the renew that only extends, the release; each checked by affected rows. No validation,
 * no record objects, no error classes. The bench compares the text of every statement both sides sent
 * and reports any difference (`sameStatements` in the results), so this file cannot drift from the
 * driver unnoticed.
 *
 * On MariaDB an UPDATE that rewrote identical values reports 0 changed rows, so, like the driver,
 * checkpoint and renew then read the row once to tell a landed write from a lost lease.
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
  const integer = sql.raw(flavour === 'postgres' ? 'bigint' : flavour === 'mariadb' ? 'SIGNED' : 'INTEGER')
  const greatest = sql.raw(flavour === 'sqlite' ? 'MAX' : 'GREATEST')
  const least = sql.raw(flavour === 'sqlite' ? 'MIN' : 'LEAST')
  // MariaDB's columns are VARBINARY: the ids go out as bytes.
  const id = (value: string): unknown => (flavour === 'mariadb' ? Buffer.from(value, 'utf8') : value)
  const integerOf = (value: bigint | number) => sql`CAST(${value.toString()} AS ${integer})`
  const valid = (held: BaselineLease) =>
    sql`work_id = ${id(held.workId)} AND token = ${integerOf(held.token)} AND holder = ${id(held.holderId)} AND released = ${no}`
  const extended = (ttlMs: number) => sql`${greatest}(expires_at, ${now} + ${ttlMs})`
  const run = <R>(query: RawBuilder<R>): Promise<QueryResult<R>> => query.execute(db)
  const liveness = (held: BaselineLease) =>
    run(sql<{ live: unknown }>`SELECT CASE WHEN expires_at > ${now} THEN 1 ELSE 0 END AS live
FROM ${t} WHERE ${valid(held)}`)
  const changed = (result: QueryResult<unknown>) => (result.numAffectedRows ?? 0n) > 0n
  // Checkpoints are ordered by a sequence that only grows, as the driver's are.
  let sequence = 0

  type Acquired = { token: string; acquired: unknown }
  const takeover = sql`ON CONFLICT (work_id) DO UPDATE SET token = l.token + 1, holder = excluded.holder, expires_at = excluded.expires_at, released = ${no}, clean_handoff = l.released, checkpoint_seq = 0`
  const acquireSql = (workId: string, holderId: string, ttlMs: number): RawBuilder<Acquired> => {
    if (flavour === 'sqlite') {
      return sql<Acquired>`INSERT INTO ${t} AS l (work_id, token, holder, expires_at, released, clean_handoff, checkpoint_seq)
VALUES (${workId}, 1, ${holderId}, ${now} + ${ttlMs}, 0, 1, 0)
${takeover}
WHERE (l.released = 1 OR l.expires_at <= ${now}) AND l.token < ${MAX_TOKEN}
RETURNING 1 AS acquired, CAST("token" AS TEXT) AS token, CAST("expires_at" AS TEXT) AS expires_at`
    }
    if (flavour === 'mariadb') {
      const clockNow = sql`wl_clock.wl_now`
      const free = sql`(released <> 0 OR expires_at <= ${clockNow})`
      const take = sql`(${free} AND token < ${MAX_TOKEN})`
      const took = sql`LAST_INSERT_ID() BETWEEN 1 AND ${MAX_TOKEN}`
      const work = id(workId)
      const holder = id(holderId)
      return sql<Acquired>`INSERT INTO ${t} (work_id, token, holder, expires_at, released, clean_handoff, checkpoint_seq)
SELECT ${work}, LAST_INSERT_ID(1), ${holder}, ${clockNow} + ${ttlMs}, 0, 1, 0 FROM (SELECT ${now} AS wl_now LIMIT 1) AS wl_clock
ON DUPLICATE KEY UPDATE
  holder = IF(${take}, ${holder}, holder),
  clean_handoff = IF(${take}, released, clean_handoff),
  checkpoint_seq = IF(${take}, 0, checkpoint_seq),
  token = IF(${take}, LAST_INSERT_ID(token + 1), token + (LAST_INSERT_ID(IF(${free}, -1, 0)) & 0)),
  expires_at = IF(${took}, ${clockNow} + ${ttlMs}, expires_at),
  released = IF(${took}, 0, released)
RETURNING CAST(\`token\` AS CHAR) AS token, CAST(\`expires_at\` AS CHAR) AS expires_at, holder,
  CAST(LAST_INSERT_ID() AS CHAR) AS acquired, CAST(expires_at - ${now} AS CHAR) AS expires_in`
    }
    return sql<Acquired>`WITH wl_clock AS (SELECT ${now} AS wl_now),
taken AS (
  INSERT INTO ${t} AS l (work_id, token, holder, expires_at, released, clean_handoff, checkpoint_seq)
  SELECT ${workId}, 1, ${holderId}, wl_clock.wl_now + ${ttlMs}, false, true, 0 FROM wl_clock
  ${takeover}
  WHERE (l.released OR l.expires_at <= (SELECT wl_now FROM wl_clock)) AND l.token < ${MAX_TOKEN}
  RETURNING l.token, l.expires_at
),
held AS (
  SELECT l.token, l.holder, l.expires_at, l.released OR l.expires_at <= wl_clock.wl_now AS free,
    l.expires_at - wl_clock.wl_now AS expires_in
  FROM ${t} AS l, wl_clock
  WHERE l.work_id = ${workId} AND NOT EXISTS (SELECT FROM taken)
  FOR SHARE OF l
)
SELECT true AS acquired, token::text AS token, expires_at::text AS expires_at, NULL::text AS holder,
  NULL::boolean AS free, NULL::text AS expires_in FROM taken
UNION ALL
SELECT false, token::text, expires_at::text, holder, free, expires_in::text FROM held`
  }
  // SQLite's upsert cannot name the holder in the way: the driver reads it on that path, and so does this.
  const holderOf = (workId: string) =>
    run(sql`SELECT CAST("token" AS TEXT) AS token, holder, CAST("expires_at" AS TEXT) AS expires_at,
  CASE WHEN released <> 0 OR expires_at <= wl_clock.wl_now THEN 1 ELSE 0 END AS free,
  CAST(expires_at - wl_clock.wl_now AS TEXT) AS expires_in
FROM ${t}, (SELECT ${now} AS wl_now LIMIT 1) AS wl_clock WHERE work_id = ${workId}`)

  return {
    async acquire(workId, holderId, ttlMs) {
      const { rows } = await run(acquireSql(workId, holderId, ttlMs))
      const row = rows[0]
      const took =
        row &&
        (flavour === 'mariadb'
          ? String(row.acquired) !== '0'
          : row.acquired === true || Number(row.acquired) === 1)
      if (took) return { workId, holderId, token: BigInt(row.token) }
      if (flavour === 'sqlite') await holderOf(workId)
      return null
    },
    async checkpoint(held, state, ttlMs) {
      const seq = integerOf(++sequence)
      const result =
        await run(sql`UPDATE ${t} SET state = CASE WHEN checkpoint_seq < ${seq} THEN ${state} ELSE state END,
  checkpoint_seq = ${greatest}(checkpoint_seq, ${seq}), expires_at = ${extended(ttlMs)}
WHERE ${valid(held)}`)
      if (changed(result)) return
      if (flavour === 'mariadb' && (await liveness(held)).rows.length > 0) return
      throw new LostLeaseError('checkpoint')
    },
    async renew(held, ttlMs) {
      const result = await run(sql`UPDATE ${t} SET expires_at = ${extended(ttlMs)}
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
