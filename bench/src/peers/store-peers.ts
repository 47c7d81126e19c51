import { createRequire } from 'node:module'
import { performance } from 'node:perf_hooks'
import { LockManager } from 'mongo-locks'
import { MongoClient } from 'mongodb'
import { isFerretdb1 } from '../is-ferretdb1.js'
import type { Target } from '../target.js'
import { countMongoCommands } from './counting.js'
import { type LockSide, sleep } from './lock-side.js'
import { packageVersion } from './package-version.js'
import { workleaseDriverSide, workleaseSide } from './worklease-side.js'

const POOL = 16

/** worklease's Leaser and its driver alone, each over a session (pool of 16) of `target`. */
export async function workleaseSides(target: Target, unit: string): Promise<LockSide[]> {
  const leaserSession = await target.open(POOL)
  const driverSession = await target.open(POOL)
  const leaser = workleaseSide(leaserSession.backend, leaserSession.roundTrips, unit, 'worklease Leaser')
  const driver = workleaseDriverSide(
    driverSession.backend,
    driverSession.roundTrips,
    unit,
    'worklease driver',
  )
  return [
    {
      ...leaser,
      async close() {
        await leaser.close()
        await leaserSession.close()
      },
    },
    { ...driver, close: () => driverSession.close() },
  ]
}

/** The interval at which the bench polls for a library that has no waiting acquire of its own. */
export const CALLER_POLL_MS = 50

/** worklease vs mongo-locks, on the MongoDB (FerretDB) of `target`. */
export async function openMongoSides(
  target: Target,
  prefix: string,
): Promise<{ server: string; notes: string[]; sides: LockSide[] }> {
  const sides = await workleaseSides(target, 'commands')
  const client = new MongoClient(target.url!, { monitorCommands: true, maxPoolSize: POOL })
  const count = countMongoCommands(client)
  await client.connect()
  const collection = client.db('worklease_bench').collection(`${prefix}_mongo_locks`)
  const notes = ["mongo-locks on its own MongoClient (pool 16); worklease on the target's sessions"]
  // FerretDB 1.x does not implement TTL indexes (expireAfterSeconds): mongo-locks' constructor would
  // fail to create its index. There, it gets its unique index only, and its locks never expire.
  let indexes: typeof collection = collection
  if (isFerretdb1(target.server)) {
    indexes = Object.create(collection) as typeof collection
    indexes.createIndexes = ((specs: { expireAfterSeconds?: number }[]) =>
      collection.createIndexes(
        specs.filter((spec) => spec.expireAfterSeconds === undefined) as never,
      )) as never
    notes.push(
      'FerretDB 1.x has no TTL indexes: mongo-locks runs with its unique index only, so its 60 s expiry never removes a lock here',
    )
  }
  const manager = new LockManager(indexes)
  type Held = Awaited<ReturnType<LockManager['lock']>> & object
  const poll = async (key: string): Promise<Held> => {
    for (;;) {
      const lock = await manager.lock(key)
      if (lock) return lock
      await sleep(CALLER_POLL_MS)
    }
  }
  sides.push({
    label: `mongo-locks ${packageVersion('mongo-locks')}`,
    semantics:
      'no fencing token; fixed 60 s expiry, removed only by the TTL index monitor (every 60 s on MongoDB); refreshed every 10 s; release deletes the document',
    waiting: `none: lock() answers null when held; the caller polls (here every ${CALLER_POLL_MS} ms)`,
    doesLess: `acquire inserts a document (the unique index decides) and release deletes it: no expiry filter, no token, no holder read; worklease's acquire is a findAndModify filtered on expiry that increments the token and returns the document (with the previous holder's checkpoint, which the Leaser hands over by default), and its release an update filtered on token and holder${
      isFerretdb1(target.server)
        ? ', which FerretDB 1.x runs as a read and then a write through its SQLite handler (the driver alone shows the same ratio)'
        : ''
    }`,
    roundTripUnit: 'commands',
    tryAcquire: (key) => manager.lock(key),
    async release(lock: Held) {
      await lock.free()
    },
    waitAcquire: (key) => poll(key),
    async crash() {
      return {
        notMeasured:
          'no ttl option: a lock lasts 60 s and its document is removed by the TTL monitor (every 60 s), so a crashed holder blocks for 60-120 s',
      }
    },
    roundTrips: count,
    async close() {
      await collection.drop().catch(() => undefined)
      await client.close()
    },
  } as LockSide<Held>)
  return {
    server: target.server,
    notes,
    sides,
  }
}

/** worklease vs advisory-lock, on the PostgreSQL of `target`. */
export async function openPostgresSides(
  target: Target,
  _prefix: string,
): Promise<{ server: string; notes: string[]; sides: LockSide[] }> {
  const sides = await workleaseSides(target, 'statements')
  const require = createRequire(createRequire(import.meta.url).resolve('advisory-lock'))
  // The pg that advisory-lock itself loads; its clients are told apart by application_name.
  const pg = require('pg') as typeof import('pg')
  const advisoryLock = createRequire(import.meta.url)('advisory-lock') as {
    default: (url: string) => (name: string) => {
      tryLock(): Promise<(() => Promise<void>) | undefined>
      lock(): Promise<() => Promise<void>>
    }
    strToKey: (name: string) => [number, number]
  }
  const APP = 'worklease-bench-advisory-lock'
  const url = new URL(target.url!)
  url.searchParams.set('application_name', APP)
  let statements = 0
  const proto = pg.Client.prototype as unknown as Record<string, (...args: unknown[]) => unknown>
  const query = proto.query!
  const ours = (client: unknown) =>
    (client as { connectionParameters?: { application_name?: string } }).connectionParameters
      ?.application_name === APP
  proto.query = function (this: unknown, ...args: unknown[]) {
    if (ours(this)) statements++
    return query.apply(this, args)
  }
  const mutex = advisoryLock.default(url.toString())
  type Unlock = () => Promise<void>
  sides.push({
    label: `advisory-lock ${packageVersion('advisory-lock')}`,
    semantics:
      'no fencing token; no expiry: session-bound (pg_advisory_lock), held until unlocked or the connection ends; a new connection per lock',
    waiting: 'server-side: pg_advisory_lock blocks until the holder unlocks or its session ends',
    doesLess:
      'pg_try_advisory_lock and pg_advisory_unlock touch no table: no row, no expiry, no token, nothing written (but it opens a connection per lock)',
    roundTripUnit: 'statements (+ 1 new connection per lock, not counted)',
    tryAcquire: async (key) => (await mutex(key).tryLock()) ?? null,
    release: (unlock: Unlock) => unlock(),
    waitAcquire: (key) => mutex(key).lock(),
    async crash(key, ttlMs) {
      // The holder's process dies at the ttl mark: its socket closes and PostgreSQL ends the session.
      // (A holder that hangs, or whose host vanishes, keeps the lock until TCP keepalive notices.)
      const holder = new pg.Client({ connectionString: target.url! })
      await holder.connect()
      holder.on('error', () => undefined)
      const [k1, k2] = advisoryLock.strToKey(key)
      await holder.query(`SELECT pg_advisory_lock(${k1}, ${k2})`)
      const freeAt = sleep(ttlMs).then(() => {
        const at = performance.now()
        ;(holder as unknown as { connection: { stream: { destroy(): void } } }).connection.stream.destroy()
        return at
      })
      return { freeAt }
    },
    roundTrips: () => statements,
    async close() {
      proto.query = query
    },
  } as LockSide<Unlock>)
  return {
    server: target.server,
    notes: [
      'advisory-lock opens a pg connection per lock (connect, then one statement); counted: statements only',
      "worklease on the target's sessions (Kysely over a pg Pool of 16)",
    ],
    sides,
  }
}
