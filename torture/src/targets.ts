import { randomBytes } from 'node:crypto'
import { mkdirSync } from 'node:fs'
import { join } from 'node:path'
import type { Backend, Clock } from '@worklease/spec'
import { childServer } from './child-server.js'
import { type MemoryBug, MemoryRpcBackend, MemoryServer } from './memory-rpc.js'
import { mariadbBinaries, postgresBinDir, privateMariadb, privatePostgres } from './sql-servers.js'

/** The backends the suite can torture. */
export const BACKENDS = [
  'memory',
  'sqlite',
  'postgres',
  'mariadb',
  'ferretdb',
  'dynalite',
  'mysql97',
  'ferretdb2',
  'dynamodb-local',
] as const
export type BackendName = (typeof BACKENDS)[number]

/**
 * The genuine servers of scripts/servers.sh, shared and never restarted by the suite (an outage is a
 * long proxy black-hole instead), and the variable that names each.
 */
export const SHARED_SERVERS = {
  mysql97: 'MYSQL97_URL',
  ferretdb2: 'FERRETDB2_URL',
  'dynamodb-local': 'DYNAMODB_LOCAL_ENDPOINT',
} as const satisfies Partial<Record<BackendName, string>>

/** Why `backend` cannot run here (its server's variable is unset), or undefined. */
export function unavailable(backend: BackendName): string | undefined {
  const variable = (SHARED_SERVERS as Partial<Record<BackendName, string>>)[backend]
  if (variable === undefined || process.env[variable]) return undefined
  return `${variable} is not set (scripts/servers.sh start, then eval "$(scripts/servers.sh env)")`
}

/** Whose clock decides expiry: the server's, or each caller's (which the nemesis skews). */
export const clockOf = (backend: BackendName): 'server' | 'client' =>
  backend === 'postgres' || backend === 'mariadb' || backend === 'sqlite' || backend === 'mysql97'
    ? 'server'
    : 'client'

export const POSTGRES_URL = process.env.POSTGRES_URL ?? 'postgres://postgres@127.0.0.1:5432/test'
export const MYSQL_URL = process.env.MYSQL_URL ?? 'mysql://root@127.0.0.1:3306/test'

/** What the coordinator hands to every worker so it can open the backend. */
export interface TargetInfo {
  backend: BackendName
  /** The port workers connect to: the fault proxy's, or the server's when not proxied. */
  port: number
  table: string
  sqliteFile?: string
  /** PostgreSQL and MariaDB: user and database (the host and port are replaced by the proxy's). */
  url?: string
  /** Connections per worker process (pool size). Default 3. */
  connections?: number
}

/** The server side of a backend, in the coordinator. */
export interface ServerHandle {
  /** Where the real server listens (the proxy forwards there), or 0 when there is no server. */
  readonly port: number
  /** Why this server cannot be restarted by the suite, when it cannot. */
  readonly noRestart?: string
  /** The server's own note when it does not make cross-connection writes atomic. */
  readonly notAtomic?: string
  restart?(): Promise<void>
  stop(): Promise<void>
}

const FERRETDB_NOTE =
  'FerretDB 1.x implements findAndModify as a read followed by a write, so conditional writes from ' +
  'separate connections are not atomic with respect to each other'

/** Starts (or connects to) the server of `backend`, with `dir` for its data, and prepares the table. */
export async function startServer(
  backend: BackendName,
  dir: string,
  bug?: MemoryBug,
): Promise<{ server: ServerHandle; info: Omit<TargetInfo, 'port'> }> {
  const table = `torture_${randomBytes(4).toString('hex')}`
  switch (backend) {
    case 'memory': {
      const memory = new MemoryServer(bug)
      const port = await memory.listen()
      return {
        server: {
          port,
          noRestart: 'the store lives in memory: a restart loses it by design',
          stop: () => memory.close(),
        },
        info: { backend, table },
      }
    }
    case 'sqlite': {
      const sqliteFile = join(dir, 'leases.db')
      const { db } = await kyselyFor('sqlite', 0, sqliteFile)
      const { sql } = await import('kysely')
      await sql`PRAGMA journal_mode = WAL`.execute(db)
      const { createLeaseTable } = await import('@worklease/kysely')
      await createLeaseTable(db, { table })
      await db.destroy()
      return {
        server: {
          port: 0,
          noRestart: 'no server: every worker opens the file',
          stop: async () => {},
        },
        info: { backend, table, sqliteFile },
      }
    }
    case 'postgres':
    case 'mariadb': {
      // A server of the suite's own, so the nemesis can crash and restart it, unless the user points
      // the run at a server (POSTGRES_URL / MYSQL_URL), which is never restarted.
      const given = backend === 'postgres' ? process.env.POSTGRES_URL : process.env.MYSQL_URL
      const binDir = backend === 'postgres' ? postgresBinDir() : undefined
      const binaries = backend === 'mariadb' ? mariadbBinaries() : undefined
      if (given === undefined && (binDir || binaries)) {
        const own = binDir ? await privatePostgres(dir, binDir) : await privateMariadb(dir, binaries!)
        const { db } = await kyselyFor(backend, own.port, undefined, 1, own.url)
        const { createLeaseTable } = await import('@worklease/kysely')
        await createLeaseTable(db, { table })
        await db.destroy()
        return { server: own, info: { backend, table, url: own.url } }
      }
      const shared = backend === 'postgres' ? POSTGRES_URL : MYSQL_URL
      const port = Number(new URL(shared).port)
      const { db } = await kyselyFor(backend, port, undefined, 1, shared)
      const { createLeaseTable, dropLeaseTable } = await import('@worklease/kysely')
      await createLeaseTable(db, { table })
      await db.destroy()
      return {
        server: {
          port,
          noRestart:
            given === undefined
              ? `no ${backend} server binaries here, so the run uses the shared server and an outage is a long proxy black-hole instead`
              : `the server is the one ${backend === 'postgres' ? 'POSTGRES_URL' : 'MYSQL_URL'} names, which the suite never restarts: an outage is a long proxy black-hole instead`,
          stop: async () => {
            const { db } = await kyselyFor(backend, port, undefined, 1, shared)
            await dropLeaseTable(db, { table }).catch(() => undefined)
            await db.destroy()
          },
        },
        info: { backend, table, url: shared },
      }
    }
    case 'ferretdb': {
      const { buildFerretdb, ferretdbArgs } = await import('@worklease/test-servers')
      const binary: string = buildFerretdb({ log: () => {} })
      const ferretDir = join(dir, 'ferretdb')
      mkdirSync(join(ferretDir, 'data'), { recursive: true })
      mkdirSync(join(ferretDir, 'state'), { recursive: true })
      const child = await childServer('FerretDB', binary, (port) =>
        ferretdbArgs({ dir: ferretDir, port, logLevel: 'error' }),
      )
      const { MongoClient } = await import('mongodb')
      const client = new MongoClient(`mongodb://127.0.0.1:${child.port}/?directConnection=true`)
      const { createLeaseCollection } = await import('@worklease/mongodb')
      await createLeaseCollection(client.db('torture') as never, { collection: table })
      await client.close()
      return {
        server: { ...child, notAtomic: FERRETDB_NOTE },
        info: { backend, table },
      }
    }
    case 'mysql97':
    case 'ferretdb2':
    case 'dynamodb-local': {
      const variable = SHARED_SERVERS[backend]
      const url = process.env[variable]
      if (!url) throw new Error(`${backend}: ${unavailable(backend)}`)
      const port = Number(new URL(url).port)
      const prepare = async (drop: boolean) => {
        if (backend === 'mysql97') {
          const { db } = await kyselyFor('mysql97', port, undefined, 1, url)
          const { createLeaseTable, dropLeaseTable } = await import('@worklease/kysely')
          await (drop
            ? dropLeaseTable(db, { table }).catch(() => undefined)
            : createLeaseTable(db, { table }))
          await db.destroy()
        } else if (backend === 'ferretdb2') {
          const { MongoClient } = await import('mongodb')
          const client = new MongoClient(`mongodb://127.0.0.1:${port}/?directConnection=true`)
          const { createLeaseCollection } = await import('@worklease/mongodb')
          if (drop)
            await client
              .db('torture')
              .collection(table)
              .drop()
              .catch(() => undefined)
          else await createLeaseCollection(client.db('torture') as never, { collection: table })
          await client.close()
        } else {
          const { client } = await dynamoFor(port)
          const { createLeaseTable } = await import('@worklease/dynamodb')
          const { DeleteTableCommand } = await import('@aws-sdk/client-dynamodb')
          if (drop) await client.send(new DeleteTableCommand({ TableName: table })).catch(() => undefined)
          else await createLeaseTable(client, { table, listIndex: LIST_INDEX })
          client.destroy()
        }
      }
      await prepare(false)
      return {
        server: {
          port,
          noRestart: `the server is the one ${variable} names (scripts/servers.sh), which the suite never restarts: an outage is a long proxy black-hole instead`,
          stop: () => prepare(true),
        },
        info: { backend, table, url },
      }
    }
    case 'dynalite': {
      const { dynaliteArgs } = await import('@worklease/test-servers')
      const child = await childServer('dynalite', process.execPath, (port) =>
        dynaliteArgs({ port, path: join(dir, 'dynalite') }),
      )
      const { client } = await dynamoFor(child.port)
      const { createLeaseTable } = await import('@worklease/dynamodb')
      await createLeaseTable(client, { table, listIndex: LIST_INDEX })
      client.destroy()
      return { server: child, info: { backend, table } }
    }
  }
}

async function kyselyFor(
  backend: 'sqlite' | 'postgres' | 'mariadb' | 'mysql97',
  port: number,
  file?: string,
  connections = 3,
  baseUrl?: string,
) {
  const { Kysely, PostgresDialect, MysqlDialect, SqliteDialect } = await import('kysely')
  if (backend === 'sqlite') {
    const { default: Database } = await import('better-sqlite3')
    return {
      db: new Kysely<any>({
        dialect: new SqliteDialect({ database: new Database(file!, { timeout: 5_000 }) }),
      }),
    }
  }
  if (backend === 'postgres') {
    const { default: pg } = await import('pg')
    const url = new URL(baseUrl ?? POSTGRES_URL)
    url.port = String(port)
    const pool = new pg.Pool({
      connectionString: url.toString(),
      max: connections,
      connectionTimeoutMillis: 2_000,
    })
    // A connection the proxy reset while idle is reported here; the pool drops it and moves on.
    pool.on('error', () => {})
    // A connection the proxy resets while a query runs also emits 'error' on its client.
    pool.on('connect', (client) => client.on('error', () => {}))
    return { db: new Kysely<any>({ dialect: new PostgresDialect({ pool }) }) }
  }
  const { createPool } = await import('mysql2')
  const url = new URL(baseUrl ?? MYSQL_URL)
  url.port = String(port)
  const pool = createPool({ uri: url.toString(), connectionLimit: connections, connectTimeout: 2_000 })
  pool.on('connection', (connection) => connection.on('error', () => {}))
  return { db: new Kysely<any>({ dialect: new MysqlDialect({ pool }) }) }
}

/** The lease tables' list index (a GSI), which pools need to find their members. */
const LIST_INDEX = 'worklease-list'

async function dynamoFor(port: number) {
  const { DynamoDBClient } = await import('@aws-sdk/client-dynamodb')
  const client = new DynamoDBClient({
    endpoint: `http://127.0.0.1:${port}`,
    region: 'us-east-1',
    credentials: { accessKeyId: 'torture', secretAccessKey: 'torture' },
    maxAttempts: 1,
  })
  return { client }
}

/** Opens the backend in a worker process, with its own connections and the given clock. */
export async function openBackend(
  info: TargetInfo,
  clock: Clock,
): Promise<{ backend: Backend; close(): Promise<void> }> {
  switch (info.backend) {
    case 'memory': {
      const backend = new MemoryRpcBackend(info.port, clock)
      return { backend, close: async () => backend.close() }
    }
    case 'sqlite':
    case 'postgres':
    case 'mariadb':
    case 'mysql97': {
      const { db } = await kyselyFor(info.backend, info.port, info.sqliteFile, info.connections, info.url)
      const { KyselyBackend } = await import('@worklease/kysely')
      const backend = new KyselyBackend({
        db,
        table: info.table,
        ...(info.backend === 'mariadb'
          ? { dialect: 'mariadb' }
          : info.backend === 'mysql97'
            ? { dialect: 'mysql' }
            : {}),
      })
      return { backend, close: () => db.destroy() }
    }
    case 'ferretdb':
    case 'ferretdb2': {
      const { MongoClient } = await import('mongodb')
      const client = new MongoClient(`mongodb://127.0.0.1:${info.port}/?directConnection=true`, {
        maxPoolSize: info.connections ?? 3,
        serverSelectionTimeoutMS: 2_000,
        connectTimeoutMS: 2_000,
        socketTimeoutMS: 5_000,
        // After a restart the driver marks the server unknown and waits for a heartbeat; the default
        // 10 s would stall the workload for most of a short run.
        heartbeatFrequencyMS: 500,
      })
      // Connected before the worker says it is ready, and again until it is: the driver closes the
      // topology for good when the connect an operation starts fails (a worker respawned during an
      // outage), and every later operation then fails at once with "Topology is closed". A worker
      // like that ran none of its counter increments until the nemesis happened to kill it again.
      for (let attempt = 1; ; attempt++) {
        try {
          await client.connect()
          break
        } catch (error) {
          if (attempt >= 30) throw error
          await new Promise((resolve) => setTimeout(resolve, 200))
        }
      }
      const { MongoBackend } = await import('@worklease/mongodb')
      const backend = new MongoBackend({
        collection: client.db('torture').collection(info.table) as never,
        clock,
        // FerretDB 2 on DocumentDB needs no options: its findAndModify is atomic.
        ...(info.backend === 'ferretdb'
          ? {
              crossConnectionAtomic: false,
              crossConnectionAtomicNote: FERRETDB_NOTE,
              findAndModifyProjection: false,
            }
          : {}),
      })
      return { backend, close: () => client.close(true) }
    }
    case 'dynalite':
    case 'dynamodb-local': {
      const { client } = await dynamoFor(info.port)
      const { DynamoBackend } = await import('@worklease/dynamodb')
      const backend = new DynamoBackend({
        client,
        table: info.table,
        clock,
        // dynalite ignores ReturnValuesOnConditionCheckFailure; DynamoDB Local implements it.
        returnValuesOnConditionCheckFailure: info.backend === 'dynamodb-local',
        // dynalite has no PartiQL: one UpdateItem per renewal there.
        renewMany: info.backend === 'dynamodb-local',
        // Pools find their members by listing: the tables are made with the index.
        listIndex: LIST_INDEX,
      })
      return { backend, close: async () => client.destroy() }
    }
  }
}
