import type { Backend } from '@worklease/spec'
import { CliError } from './cli-error.js'
import { ExitCode } from './exit-code.js'
import type { StoreTarget } from './store-url.js'

/** A backend the command line opened, and how to let go of its connections. */
export interface OpenBackend {
  readonly backend: Backend
  /** Where it points, for headers and messages, without credentials. */
  readonly label: string
  close(): Promise<void>
}

/** Imports a store client the user installs beside the CLI, or says plainly which one is missing. */
async function client<T>(name: string, load: () => Promise<T>): Promise<T> {
  try {
    return await load()
  } catch (error) {
    if ((error as { code?: unknown }).code === 'ERR_MODULE_NOT_FOUND') {
      throw new CliError(`this store needs the package ${name}: npm install ${name}`, ExitCode.USAGE, {
        cause: error,
      })
    }
    throw error
  }
}

const withoutPassword = (text: string): string => {
  const url = new URL(text)
  if (url.password) url.password = '***'
  return url.toString()
}

/** Opens the lease backend of a store; `table` is `--table`, used where the URL names none. */
export async function openBackend(target: StoreTarget, table: string | undefined): Promise<OpenBackend> {
  switch (target.kind) {
    case 'sqlite': {
      const { existsSync } = await import('node:fs')
      if (!existsSync(target.file)) {
        throw new CliError(`no SQLite database at ${target.file}`, ExitCode.STORE_FAILED)
      }
      const [{ default: Database }, { Kysely, SqliteDialect }, { KyselyBackend }] = await Promise.all([
        client('better-sqlite3', () => import('better-sqlite3')),
        import('kysely'),
        import('@worklease/kysely'),
      ])
      // Read-write: revoke writes. fileMustExist keeps a typo from creating an empty database.
      const db = new Kysely<unknown>({
        dialect: new SqliteDialect({
          database: new Database(target.file, { fileMustExist: true, timeout: 5_000 }),
        }),
      })
      const name = target.table ?? table
      return {
        backend: new KyselyBackend({ db, dialect: 'sqlite', ...(name ? { table: name } : {}) }),
        label: `sqlite:${target.file}`,
        close: () => db.destroy(),
      }
    }
    case 'postgres': {
      const [{ default: pg }, { Kysely, PostgresDialect }, { KyselyBackend }] = await Promise.all([
        client('pg', () => import('pg')),
        import('kysely'),
        import('@worklease/kysely'),
      ])
      const db = new Kysely<unknown>({
        dialect: new PostgresDialect({ pool: new pg.Pool({ connectionString: target.url, max: 1 }) }),
      })
      const name = target.table ?? table
      return {
        backend: new KyselyBackend({ db, dialect: 'postgres', ...(name ? { table: name } : {}) }),
        label: withoutPassword(target.url),
        close: () => db.destroy(),
      }
    }
    case 'mysql': {
      const [{ createPool }, { Kysely, MysqlDialect }, { KyselyBackend }] = await Promise.all([
        client('mysql2', () => import('mysql2')),
        import('kysely'),
        import('@worklease/kysely'),
      ])
      const db = new Kysely<unknown>({
        dialect: new MysqlDialect({ pool: createPool({ uri: target.url, connectionLimit: 1 }) }),
      })
      const name = target.table ?? table
      return {
        backend: new KyselyBackend({ db, ...(name ? { table: name } : {}) }),
        label: withoutPassword(target.url),
        close: () => db.destroy(),
      }
    }
    case 'mongodb': {
      const [{ MongoClient }, { MongoBackend, DEFAULT_LEASE_COLLECTION }] = await Promise.all([
        client('mongodb', () => import('mongodb')),
        import('@worklease/mongodb'),
      ])
      const mongo = new MongoClient(target.url, { serverSelectionTimeoutMS: 5_000 })
      const collection = mongo
        .db(target.database)
        .collection(target.collection ?? table ?? DEFAULT_LEASE_COLLECTION)
      return {
        backend: new MongoBackend({
          collection,
          ...(target.binarySizeProjection === undefined
            ? {}
            : { binarySizeProjection: target.binarySizeProjection }),
        }),
        label: withoutPassword(target.url),
        close: () => mongo.close(),
      }
    }
    case 'dynamodb': {
      const [{ DynamoDBClient }, { DynamoBackend }] = await Promise.all([
        client('@aws-sdk/client-dynamodb', () => import('@aws-sdk/client-dynamodb')),
        import('@worklease/dynamodb'),
      ])
      const tableName = target.table ?? table
      if (!tableName) throw new CliError('DynamoDB needs a table: ?table=... or --table', ExitCode.USAGE)
      // A local endpoint checks that requests are signed, not by whom; AWS uses the environment's keys.
      const local = target.endpoint !== undefined && !process.env.AWS_ACCESS_KEY_ID
      const dynamo = new DynamoDBClient({
        ...(target.endpoint ? { endpoint: target.endpoint } : {}),
        region: target.region ?? process.env.AWS_REGION ?? 'us-east-1',
        ...(local ? { credentials: { accessKeyId: 'worklease', secretAccessKey: 'worklease' } } : {}),
      })
      return {
        backend: new DynamoBackend({
          client: dynamo,
          table: tableName,
          ...(target.listIndex ? { listIndex: target.listIndex } : {}),
        }),
        label: `dynamodb ${target.endpoint ?? 'AWS'} table ${tableName}`,
        close: async () => dynamo.destroy(),
      }
    }
  }
}
