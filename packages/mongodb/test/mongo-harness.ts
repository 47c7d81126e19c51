import { randomUUID } from 'node:crypto'
import { type BackendFactory, type BackendHarness, RoundTripFailer } from '@worklease/testkit'
import { type Collection, type Document, MongoClient, MongoNetworkError } from 'mongodb'
import { inject } from 'vitest'
import { createLeaseCollection, MongoBackend, type MongoBackendOptions } from '../src/index.js'

export const url = inject('mongodbUrl')
export const ferretdbVersion = inject('ferretdbVersion')
export const TEST_DATABASE = 'worklease_test'

/** What FerretDB 1.x cannot promise, as the testkit prints it next to each skipped race case. */
export const FERRETDB_NOTE =
  'FerretDB 1.x implements findAndModify as a read followed by a write by _id, so conditional writes ' +
  'from separate connections are not atomic with respect to each other; run with MONGODB_URL set to a ' +
  'real MongoDB to judge the cross-connection race cases'

/** FerretDB 1.x, the fallback when no server is given; FerretDB 2 (on DocumentDB) needs no options. */
export const ferretdb1 = ferretdbVersion !== null && /^v?1\./.test(ferretdbVersion)

/** The options a backend needs on the server under test. */
export const serverOptions: Omit<MongoBackendOptions, 'collection'> = ferretdb1
  ? {
      crossConnectionAtomic: false,
      crossConnectionAtomicNote: FERRETDB_NOTE,
      findAndModifyProjection: false,
      binarySizeProjection: false,
    }
  : {}

// Sent by the driver itself (connection upkeep, session cleanup), never by a backend operation. A
// getMore is not one of them: it is a cursor's next round trip, which a backend operation causes.
const DRIVER_COMMANDS = new Set(['hello', 'ismaster', 'isMaster', 'endSessions', 'ping', 'buildInfo'])

/** A MongoClient that counts the commands sent over it, as a separate process would have its own. */
export function countingClient(): { client: MongoClient; commands: () => string[] } {
  const client = new MongoClient(url, { monitorCommands: true, maxPoolSize: 10 })
  const seen: string[] = []
  client.on('commandStarted', (event) => {
    if (!DRIVER_COMMANDS.has(event.commandName)) seen.push(event.commandName)
  })
  return { client, commands: () => seen }
}

// The Collection methods that send a command and return its promise, and those that return a cursor
// whose first read sends one. Every other property (names, options, sync helpers) passes through.
const PROMISE_OPERATIONS = new Set([
  'findOneAndUpdate',
  'findOneAndReplace',
  'findOneAndDelete',
  'findOne',
  'updateOne',
  'updateMany',
  'replaceOne',
  'insertOne',
  'insertMany',
  'deleteOne',
  'deleteMany',
  'bulkWrite',
  'countDocuments',
  'estimatedDocumentCount',
  'distinct',
])
const CURSOR_OPERATIONS = new Set(['find', 'aggregate'])
const CURSOR_READS = new Set(['toArray', 'next', 'tryNext', 'hasNext', 'forEach'])

/**
 * What the driver throws when the connection under a command drops (a reset socket becomes a
 * `MongoNetworkError` with the socket's error as its cause), and its retry, if any, fails too.
 */
export function droppedConnectionError(): MongoNetworkError {
  const cause = Object.assign(new Error('read ECONNRESET'), {
    code: 'ECONNRESET',
    errno: -104,
    syscall: 'read',
  })
  return new MongoNetworkError('read ECONNRESET (injected by the test harness)', { cause })
}

/**
 * `BackendHarness.failNextCall` for MongoDB: `wrap` gives each backend its collection behind a Proxy;
 * after `failNextCall()`, the next operation on any wrapped collection rejects with
 * {@link droppedConnectionError} without calling the driver, so no command is sent (and none is
 * counted). A cursor method fails at its first read, where the driver would send the command.
 */
export function commandFailer(): {
  wrap<T extends object>(collection: T): T
  failNextCall(skipRoundTrips?: number): void
} {
  const failer = new RoundTripFailer()
  const take = (): boolean => failer.take()
  const failingCursor = <C extends object>(cursor: C): C => {
    let failed = false
    return new Proxy(cursor, {
      get(target, property) {
        const value = Reflect.get(target, property, target)
        if (typeof value !== 'function') return value
        if (failed || !CURSOR_READS.has(String(property))) return value.bind(target)
        return () => {
          // The cursor never sends its command, so it holds nothing on the server to close.
          failed = true
          return Promise.reject(droppedConnectionError())
        }
      },
    })
  }
  return {
    wrap: (collection) =>
      new Proxy(collection, {
        get(target, property) {
          const value = Reflect.get(target, property, target)
          if (typeof value !== 'function') return value
          const name = String(property)
          if (PROMISE_OPERATIONS.has(name)) {
            return (...args: unknown[]) =>
              take() ? Promise.reject(droppedConnectionError()) : value.apply(target, args)
          }
          if (CURSOR_OPERATIONS.has(name)) {
            return (...args: unknown[]) => {
              const cursor = value.apply(target, args)
              return take() ? failingCursor(cursor) : cursor
            }
          }
          return value.bind(target)
        },
      }),
    failNextCall: (skipRoundTrips) => failer.failNextCall(skipRoundTrips),
  }
}

export interface MongoHarness extends BackendHarness {
  /** The case's collection, over an unmonitored client: for inspecting and arranging documents. */
  readonly collection: Collection<Document>
  /** Names of the commands the opened backends sent, in order. */
  commands(): string[]
}

/**
 * Each case gets its own collection in {@link TEST_DATABASE}; each `open` its own MongoClient (own
 * connection pool), so cases that race backends race separate connections.
 */
export function mongoHarnessFactory(extra: Partial<MongoBackendOptions> = {}): () => Promise<MongoHarness> {
  return async () => {
    const admin = new MongoClient(url)
    const name = `lease_${randomUUID().replaceAll('-', '')}`
    const { collection } = await createLeaseCollection(admin.db(TEST_DATABASE), { collection: name })
    const opened: { client: MongoClient; commands: () => string[] }[] = []
    const failer = commandFailer()
    return {
      collection,
      open: ({ clock }) => {
        const counting = countingClient()
        opened.push(counting)
        return new MongoBackend({
          collection: failer.wrap(counting.client.db(TEST_DATABASE).collection(name)),
          clock,
          ...serverOptions,
          ...extra,
        })
      },
      // A released lease at `token`, as if `token` acquires had come before: releasedToken = token
      // makes the next acquire a clean handoff.
      seedToken: async (workId, token) => {
        await collection.insertOne({
          _id: workId as unknown as Document['_id'],
          fencingToken: token,
          holderId: 'seeded',
          expiresAt: new Date(0),
          released: true,
          releasedToken: token,
        })
      },
      failNextCall: failer.failNextCall,
      roundTrips: () => opened.reduce((sum, { commands }) => sum + commands().length, 0),
      commands: () => opened.flatMap(({ commands }) => commands()),
      close: async () => {
        await Promise.all(opened.map(({ client }) => client.close()))
        await collection.drop().catch(() => undefined)
        await admin.close()
      },
    }
  }
}

export const mongoFactory: BackendFactory = mongoHarnessFactory()
