import { randomUUID } from 'node:crypto'
import type { BackendFactory, BackendHarness } from '@worklease/testkit'
import { type Collection, type Document, MongoClient } from 'mongodb'
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

// Sent by the driver itself (connection upkeep, session cleanup), never by a backend operation.
const DRIVER_COMMANDS = new Set([
  'hello',
  'ismaster',
  'isMaster',
  'endSessions',
  'ping',
  'buildInfo',
  'getMore',
])

/** A MongoClient that counts the commands sent over it, as a separate process would have its own. */
export function countingClient(): { client: MongoClient; commands: () => string[] } {
  const client = new MongoClient(url, { monitorCommands: true, maxPoolSize: 10 })
  const seen: string[] = []
  client.on('commandStarted', (event) => {
    if (!DRIVER_COMMANDS.has(event.commandName)) seen.push(event.commandName)
  })
  return { client, commands: () => seen }
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
    return {
      collection,
      open: ({ clock }) => {
        const counting = countingClient()
        opened.push(counting)
        return new MongoBackend({
          collection: counting.client.db(TEST_DATABASE).collection(name),
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
