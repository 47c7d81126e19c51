import { randomBytes } from 'node:crypto'
import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import type { DynamoDBClient } from '@aws-sdk/client-dynamodb'
import { createLeaseTable, dropLeaseTable, KyselyBackend } from '@worklease/kysely'
import type { MemoryStore } from '@worklease/memory'
import type { Backend } from '@worklease/spec'
import Database from 'better-sqlite3'
import { Kysely, SqliteDialect, sql } from 'kysely'
import { Downstream } from './downstream.js'
import type { BackendName } from './options.js'
import type { StoreSpec } from './protocol.js'

// Clients of the other stores are imported when used: every worker process loads only its own.

export const POSTGRES_URL = process.env.POSTGRES_URL ?? 'postgres://postgres@127.0.0.1:5432/test'
export const MYSQL_URL = process.env.MYSQL_URL ?? 'mysql://root@127.0.0.1:3306/test'
const MONGO_DATABASE = 'worklease_demo'

/** A worker's (or the auditor's) connections: the lease backend and the downstream store. */
export interface OpenStores {
  backend: Backend
  downstream: Downstream
  close(): Promise<void>
}

async function sqlDb(spec: StoreSpec['downstream']): Promise<Kysely<any>> {
  switch (spec.family) {
    case 'postgres': {
      const [{ PostgresDialect }, { default: pg }] = await Promise.all([import('kysely'), import('pg')])
      return new Kysely<any>({
        dialect: new PostgresDialect({ pool: new pg.Pool({ connectionString: spec.url, max: 2 }) }),
      })
    }
    case 'mysql': {
      const [{ MysqlDialect }, { createPool }] = await Promise.all([import('kysely'), import('mysql2')])
      return new Kysely<any>({
        dialect: new MysqlDialect({ pool: createPool({ uri: spec.url, connectionLimit: 2 }) }),
      })
    }
    case 'sqlite':
      // Several processes share the file: wait for another's write lock rather than fail with SQLITE_BUSY.
      return new Kysely<any>({
        dialect: new SqliteDialect({ database: new Database(spec.file, { timeout: 10_000 }) }),
      })
  }
}

async function dynamoClient(endpoint: string): Promise<DynamoDBClient> {
  const { DynamoDBClient } = await import('@aws-sdk/client-dynamodb')
  // dynalite checks that requests are signed, not by whom; a real endpoint uses the environment's.
  const dummy = !process.env.AWS_ACCESS_KEY_ID
  return new DynamoDBClient({
    endpoint,
    region: process.env.AWS_REGION ?? 'us-east-1',
    ...(dummy ? { credentials: { accessKeyId: 'worklease', secretAccessKey: 'worklease' } } : {}),
  })
}

/**
 * Opens the stores a spec names, as a separate process would: its own pool, client or file handle.
 * `memoryStore` is the shared state of the memory backend (in-process runs only).
 */
export async function openStores(
  spec: StoreSpec,
  fence: boolean,
  memoryStore?: MemoryStore,
): Promise<OpenStores> {
  const downstreamDb = await sqlDb(spec.downstream)
  const downstream = new Downstream({
    db: downstreamDb,
    family: spec.downstream.family,
    table: spec.outputTable,
    fence,
  })
  const closeDownstream = () => downstreamDb.destroy()
  switch (spec.backend) {
    case 'sqlite':
    case 'postgres':
    case 'mysql':
      // The leases and the downstream table share one database, and here one pool.
      return {
        backend: new KyselyBackend({ db: downstreamDb, table: spec.leaseTable }),
        downstream,
        close: closeDownstream,
      }
    case 'mongodb': {
      const [{ MongoClient }, { MongoBackend }] = await Promise.all([
        import('mongodb'),
        import('@worklease/mongodb'),
      ])
      const client = new MongoClient(spec.url!, { maxPoolSize: 2 })
      const collection = client.db(spec.database!).collection(spec.leaseTable)
      return {
        backend: new MongoBackend({
          collection,
          ...(spec.ferretdb ? { findAndModifyProjection: false, crossConnectionAtomic: false } : {}),
        }),
        downstream,
        close: async () => {
          await client.close()
          await closeDownstream()
        },
      }
    }
    case 'dynamodb': {
      const { DynamoBackend } = await import('@worklease/dynamodb')
      const client = await dynamoClient(spec.url!)
      return {
        backend: new DynamoBackend({
          client,
          table: spec.leaseTable,
          ...(spec.dynalite ? { renewMany: false } : {}),
        }),
        downstream,
        close: async () => {
          client.destroy()
          await closeDownstream()
        },
      }
    }
    case 'memory': {
      if (!memoryStore) throw new Error('the memory backend only runs in-process')
      const { MemoryBackend } = await import('@worklease/memory')
      return { backend: new MemoryBackend({ store: memoryStore }), downstream, close: closeDownstream }
    }
  }
}

/** The run's storage: created with unique names, dropped by `teardown`. */
export interface RunStores {
  spec: StoreSpec
  /** `--keep`: the `--store` and `--table` of `worklease list` on the lease table that stays. */
  kept?: { store: string; table: string }
  /** Where the lease store is, for the header line. */
  description: string
  /** The memory backend's shared state (memory only). */
  memoryStore?: MemoryStore
  teardown(): Promise<void>
}

/**
 * Creates a fresh lease table (collection) and downstream table for one run, starting FerretDB or
 * dynalite when no server was given.
 */
export async function setupStores(
  backend: BackendName,
  items: readonly string[],
  log: (line: string) => void,
  keep = false,
): Promise<RunStores> {
  const id = randomBytes(4).toString('hex')
  const dir = mkdtempSync(join(tmpdir(), 'worklease-demo-'))
  // --keep leaves the temp dir (the SQLite file) and the tables; connections are closed either way.
  const cleanups: (() => Promise<void> | void)[] = keep
    ? []
    : [() => rmSync(dir, { recursive: true, force: true })]
  const teardown = async () => {
    for (const cleanup of cleanups.reverse()) {
      try {
        await cleanup()
      } catch (error) {
        log(`cleanup failed: ${(error as Error).message}`)
      }
    }
  }
  const sqliteFile = join(dir, 'demo.db')
  const leaseTable = `wl_demo_${id}_leases`
  const outputTable = `wl_demo_${id}_output`
  const downstreamSpec: StoreSpec['downstream'] =
    backend === 'postgres'
      ? { family: 'postgres', url: POSTGRES_URL }
      : backend === 'mysql'
        ? { family: 'mysql', url: MYSQL_URL }
        : { family: 'sqlite', file: sqliteFile }
  try {
    const admin = await sqlDb(downstreamSpec)
    cleanups.push(() => admin.destroy())
    if (downstreamSpec.family === 'sqlite') {
      // WAL: readers run beside the writer, and a killed writer leaves nothing to recover by hand.
      await sql`PRAGMA journal_mode = WAL`.execute(admin)
    }
    const downstream = new Downstream({
      db: admin,
      family: downstreamSpec.family,
      table: outputTable,
      fence: true,
    })
    await downstream.create(items)
    if (!keep) cleanups.push(() => downstream.drop())

    const spec: StoreSpec = { backend, leaseTable, outputTable, downstream: downstreamSpec }
    let description: string
    let memoryStore: MemoryStore | undefined
    switch (backend) {
      case 'sqlite':
      case 'postgres':
      case 'mysql': {
        await createLeaseTable(admin, { table: leaseTable })
        if (!keep) cleanups.push(() => dropLeaseTable(admin, { table: leaseTable }))
        description =
          backend === 'sqlite'
            ? `SQLite file ${sqliteFile}`
            : `${backend === 'postgres' ? 'PostgreSQL' : 'MySQL/MariaDB'} at ${redact(downstreamSpec.family === 'sqlite' ? '' : downstreamSpec.url)}`
        description += `, tables ${leaseTable} and ${outputTable}`
        break
      }
      case 'mongodb': {
        let url = process.env.MONGODB_URL
        if (!url) {
          const { startFerretdb } = await import('@worklease/test-servers')
          const server = await startFerretdb({ log })
          cleanups.push(() => server.stop())
          url = server.url
        }
        const [{ MongoClient }, { createLeaseCollection }] = await Promise.all([
          import('mongodb'),
          import('@worklease/mongodb'),
        ])
        const client = new MongoClient(url, { serverSelectionTimeoutMS: 10_000 })
        cleanups.push(() => client.close())
        const db = client.db(MONGO_DATABASE)
        const info = await client.db('admin').command({ buildInfo: 1 })
        const ferretdb = typeof info.ferretdbVersion === 'string'
        const { collection } = await createLeaseCollection(db, { collection: leaseTable })
        cleanups.push(async () => {
          await collection.drop()
        })
        Object.assign(spec, { url, database: MONGO_DATABASE, ferretdb })
        description = `${ferretdb ? `FerretDB ${info.ferretdbVersion}` : `MongoDB ${info.version}`} at ${redact(url)}, collection ${MONGO_DATABASE}.${leaseTable}; downstream in ${sqliteFile}`
        break
      }
      case 'dynamodb': {
        let endpoint = process.env.DYNAMODB_ENDPOINT
        if (!endpoint) {
          const { startDynalite } = await import('@worklease/test-servers')
          const server = await startDynalite()
          cleanups.push(() => server.stop())
          endpoint = server.endpoint
        }
        const [{ DeleteTableCommand }, { createLeaseTable: createDynamoTable }] = await Promise.all([
          import('@aws-sdk/client-dynamodb'),
          import('@worklease/dynamodb'),
        ])
        const tableName = `worklease-demo-${id}`
        const client = await dynamoClient(endpoint)
        cleanups.push(() => client.destroy())
        await createDynamoTable(client, { table: tableName })
        cleanups.push(async () => {
          await client.send(new DeleteTableCommand({ TableName: tableName }))
        })
        Object.assign(spec, {
          url: endpoint,
          leaseTable: tableName,
          ...(process.env.DYNAMODB_ENDPOINT ? {} : { dynalite: true }),
        })
        description = `${process.env.DYNAMODB_ENDPOINT ? 'DynamoDB' : 'dynalite (in-process)'} at ${endpoint}, table ${tableName}; downstream in ${sqliteFile}`
        break
      }
      case 'memory':
        memoryStore = new (await import('@worklease/memory')).MemoryStore()
        description = `MemoryBackend, workers in-process; downstream in ${sqliteFile}`
        break
    }
    const kept = keep ? { store: keptStore(backend, sqliteFile), table: leaseTable } : undefined
    return { spec, description, memoryStore, teardown, ...(kept ? { kept } : {}) }
  } catch (error) {
    await teardown()
    throw error
  }
}

/** Hides a password in a connection URL. */
/** The `--store` of the kept lease table: the bare kind reads the same variable the demo did. */
function keptStore(backend: BackendName, sqliteFile: string): string {
  if (backend === 'sqlite') return `sqlite:${sqliteFile}`
  const variable = backend === 'postgres' ? 'POSTGRES_URL' : 'MYSQL_URL'
  return process.env[variable] ? backend : backend === 'postgres' ? POSTGRES_URL : MYSQL_URL
}

function redact(url: string): string {
  try {
    const parsed = new URL(url)
    if (parsed.password) parsed.password = '***'
    return parsed.toString()
  } catch {
    return url
  }
}
