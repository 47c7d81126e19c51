import { type BackendFactory, type BackendHarness, RoundTripFailer } from '@worklease/testkit'
import Database from 'better-sqlite3'
import type { DatabaseConnection, Kysely, QueryExecutor } from 'kysely'
import { createLeaseTable, dropLeaseTable, KyselyBackend, type KyselyBackendOptions } from '../src/index.js'
import type { Target, TargetStorage } from './targets.js'

export interface KyselyHarness extends BackendHarness {
  readonly storage: TargetStorage
  open(): KyselyBackend
  roundTrips(): number
}

/**
 * A harness over a fresh table (random name) on `target`. Every `open` is a separate process with its
 * own Kysely and pool (except on `:memory:`); statements are counted through each Kysely's `log` hook,
 * which fires once per statement sent, errors included. `close` drops the table and ends the pools.
 */
export async function kyselyHarness(
  target: Target,
  options: Omit<KyselyBackendOptions, 'db' | 'table'> = {},
): Promise<KyselyHarness> {
  const storage = await target.storage()
  await createLeaseTable(storage.admin, { table: storage.table })
  let statements = 0
  const opened: Kysely<any>[] = []
  const failer = new RoundTripFailer()
  const takeFailure = () => failer.take()
  return {
    storage,
    open: () => {
      const db = storage.connect(() => {
        statements++
      })
      if (storage.separateConnections) opened.push(db)
      failConnections(db, target, takeFailure)
      return new KyselyBackend({ ...options, db, table: storage.table })
    },
    roundTrips: () => statements,
    // A released lease at `token`, written past the backend (through the uncounted admin connection).
    seedToken: async (workId, token) => {
      const flag = (value: boolean) => (target.filter === 'postgres' ? value : value ? 1 : 0)
      await storage.admin
        .insertInto(storage.table)
        .values({
          work_id: workId,
          token: token.toString(),
          holder: 'seeded',
          expires_at: 0,
          released: flag(true),
          clean_handoff: flag(true),
        })
        .execute()
    },
    failNextCall: (skipRoundTrips) => failer.failNextCall(skipRoundTrips),
    acquireRoundTrips: target.dialect === 'mysql' ? 2 : 1,
    close: async () => {
      await Promise.all(opened.map((db) => db.destroy()))
      await dropLeaseTable(storage.admin, { table: storage.table })
      await storage.dispose()
    },
  }
}

export function kyselyFactory(target: Target): BackendFactory {
  return () => kyselyHarness(target)
}

const guarded = new WeakSet<object>()

/**
 * Hands every statement `db` runs a connection whose `executeQuery` first asks `takeFailure`; when it
 * says so, the statement is not sent and the call rejects as `target`'s client does for a connection
 * lost under it. Kysely has no public hook between a compiled statement and its connection (plugins
 * see queries before compiling and results after the round trip), so this wraps the `provideConnection`
 * of `db`'s executor, through which `db.executeQuery` takes its connection, and of every executor made
 * from it (the backend runs on `db.withoutPlugins()`); the connection is released as after a real
 * failure. Not counted as a statement: the log hook sits on the connection underneath.
 */
function failConnections(db: Kysely<any>, target: Target, takeFailure: () => boolean): void {
  guardExecutor(db.getExecutor(), target, takeFailure)
}

const DERIVED = ['withPlugins', 'withPlugin', 'withPluginAtFront', 'withoutPlugins'] as const

function guardExecutor(executor: QueryExecutor, target: Target, takeFailure: () => boolean): QueryExecutor {
  if (guarded.has(executor)) return executor // sqlite-memory: every open shares one Kysely
  guarded.add(executor)
  const provide = executor.provideConnection.bind(executor)
  executor.provideConnection = (consumer) =>
    provide((connection) => {
      const wrapped: DatabaseConnection = {
        executeQuery: (query) =>
          takeFailure() ? Promise.reject(connectionLost(target)) : connection.executeQuery(query),
        streamQuery: (query, chunkSize) =>
          takeFailure() ? failedStream(connectionLost(target)) : connection.streamQuery(query, chunkSize),
      }
      return consumer(wrapped)
    })
  for (const name of DERIVED) {
    const derive = (executor[name] as (...args: unknown[]) => QueryExecutor).bind(executor)
    Object.assign(executor, {
      [name]: (...args: unknown[]) => guardExecutor(derive(...args), target, takeFailure),
    })
  }
  return executor
}

// biome-ignore lint/correctness/useYield: a stream that fails before its first row
async function* failedStream(error: Error): AsyncIterableIterator<never> {
  throw error
}

/**
 * The error `target`'s client rejects a statement with when its connection breaks: pg and mysql2
 * pass on the socket's `read ECONNRESET` (mysql2 marks it `fatal`); better-sqlite3, with no socket,
 * throws its `SqliteError`, here a disk I/O error.
 */
function connectionLost(target: Target): Error {
  if (target.filter === 'sqlite') {
    return new Database.SqliteError('disk I/O error (injected by the harness)', 'SQLITE_IOERR')
  }
  const error = Object.assign(new Error('read ECONNRESET (injected by the harness)'), {
    errno: -104,
    code: 'ECONNRESET',
    syscall: 'read',
  })
  return target.filter === 'mysql' ? Object.assign(error, { fatal: true }) : error
}
