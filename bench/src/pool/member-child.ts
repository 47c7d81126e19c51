// One pool member in its own process, forked by fleet.ts: its own Leaser over the shared store, a
// LeasePool over the bench's units, and a handler that runs until the pool asks for the unit back.
// It reports every take, end, release and loss to the parent over IPC.
import { monitorEventLoopDelay, performance } from 'node:perf_hooks'
import { LeasePool, Leaser, planFairShare } from '@worklease/core'
import { KyselyBackend } from '@worklease/kysely'
import type { Backend } from '@worklease/spec'
import { Kysely, sql } from 'kysely'
import type { MemberConfig, MemberMessage, ParentMessage } from './protocol.js'

const now = () => performance.timeOrigin + performance.now()
const send = (message: MemberMessage) => {
  if (process.connected) process.send!(message)
}

/** Each member's client pool (PostgreSQL, MariaDB). */
const CONNECTIONS = 4

let pgPool: { waitingCount: number; totalCount: number } | undefined
const pgWaiting = () => (pgPool ? `${pgPool.waitingCount}/${pgPool.totalCount}` : '-')

async function openBackend(config: MemberConfig): Promise<{ backend: Backend; close(): Promise<void> }> {
  const { store } = config
  let db: Kysely<any>
  switch (store.kind) {
    case 'sqlite': {
      const [{ SqliteDialect }, { default: Database }] = await Promise.all([
        import('kysely'),
        import('better-sqlite3'),
      ])
      // Every member writes the one file. better-sqlite3 waits for another's write lock synchronously,
      // blocking the whole event loop (renewals included) for up to the busy timeout: kept at a tenth
      // of the ttl, so a busy store fails a call (retried) rather than stall a member past its ttl.
      const database = new Database(store.file, { timeout: Math.ceil(config.ttlMs / 10) })
      database.pragma('journal_mode = WAL')
      // WAL without an fsync per commit: durable across a process kill (what the bench does), and
      // ~1,000 renewals/s from 15 processes would otherwise measure the disk, not the pool.
      database.pragma('synchronous = NORMAL')
      db = new Kysely<any>({ dialect: new SqliteDialect({ database }) })
      return { backend: new KyselyBackend({ db }), close: () => db.destroy() }
    }
    case 'postgres': {
      const [{ PostgresDialect }, { default: pg }] = await Promise.all([import('kysely'), import('pg')])
      const pool = new pg.Pool({ connectionString: store.url, max: CONNECTIONS })
      pgPool = pool
      db = new Kysely<any>({ dialect: new PostgresDialect({ pool }) })
      break
    }
    case 'mariadb': {
      const [{ MysqlDialect }, { createPool }] = await Promise.all([import('kysely'), import('mysql2')])
      db = new Kysely<any>({
        dialect: new MysqlDialect({ pool: createPool({ uri: store.url, connectionLimit: CONNECTIONS }) }),
      })
      break
    }
  }
  // Ready means connected, as a service's startup check leaves it: the phases time the pool, not 40
  // PostgreSQL backends forking at once (cold, the start and join phases took 1.4-2 s longer here).
  await Promise.all(Array.from({ length: CONNECTIONS }, () => sql`SELECT 1`.execute(db)))
  return {
    backend: new KyselyBackend({ db, table: store.table, dialect: store.kind }),
    close: () => db.destroy(),
  }
}

const config = JSON.parse(process.argv[2] ?? '{}') as MemberConfig
const { backend, close } = await openBackend(config)
const leaser = new Leaser({ backend, ttlMs: config.ttlMs, holderId: config.holderId })
leaser.on('lost', ({ workId, reason }) => send({ type: 'leaseLost', workId, reason }))
if (process.env.WORKLEASE_POOL_TRACE) {
  leaser.on('renewFailed', ({ workId, op, attempt, remainingMs, error }) =>
    send({
      type: 'trace',
      text: `renewFailed ${workId} ${op} attempt=${attempt} remaining=${Math.round(remainingMs)} ${String((error as Error)?.message ?? error)} waiting=${pgWaiting()}`,
    }),
  )
}
const units = Array.from({ length: config.units }, (_, i) => `u${String(i).padStart(4, '0')}`)
const encoder = new TextEncoder()
const pool = new LeasePool({
  leaser,
  group: config.group,
  units,
  // The default planner, with what it saw and decided reported (WORKLEASE_POOL_TRACE=1).
  planner: (view, maxMoves) => {
    const plan = planFairShare(view, maxMoves)
    if (process.env.WORKLEASE_POOL_TRACE)
      send({
        type: 'trace',
        text: `plan members=${view.members.length} held=${view.holders.size} maxMoves=${maxMoves} take=${plan.take} release=${plan.release} running=${pool.units.length}`,
      })
    return plan
  },
  handler: async (lease, unit) => {
    const startedAt = now()
    const { cleanHandoff } = await lease.readCheckpoint()
    send({ type: 'taken', unit: unit.id, token: lease.fencingToken, cleanHandoff, startedAt, at: now() })
    if (!unit.signal.aborted) {
      await new Promise((resolve) => unit.signal.addEventListener('abort', resolve, { once: true }))
    }
    // Asked to stop with the lease still held: save where we are, so the successor resumes from it.
    const consent = lease.held
    if (consent) await lease.checkpoint(encoder.encode(config.holderId)).catch(() => undefined)
    send({ type: 'ended', unit: unit.id, token: lease.fencingToken, consent, at: now() })
  },
})
pool.on((event) => {
  if (event.type === 'released' || event.type === 'lost')
    send({ type: event.type, unit: event.unit, at: now() })
  else if (event.type === 'rebalanceFailed')
    send({ type: 'rebalanceFailed', message: String((event.error as Error)?.message ?? event.error) })
})

process.on('message', (message: ParentMessage) => {
  if (message.type === 'start') {
    pool.start().catch((error: unknown) => send({ type: 'failed', message: String(error) }))
  } else if (message.type === 'close') {
    void (async () => {
      await pool.close()
      await leaser.close()
      await close()
      send({ type: 'closed' })
      process.disconnect()
      process.exit(0)
    })()
  }
})
// How late this process runs its timers: renewals due while it is starved of CPU go out late.
const delay = monitorEventLoopDelay({ resolution: 10 })
delay.enable()
setInterval(() => {
  send({ type: 'lag', maxMs: delay.max / 1e6 })
  delay.reset()
}, 1_000).unref()
send({ type: 'ready' })
