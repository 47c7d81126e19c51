import { existsSync } from 'node:fs'
import { homedir } from 'node:os'
import { join } from 'node:path'
import { type Backend, isInvalidArgumentError, raceAbort } from '@worklease/spec'
import { boundedStoreCall, storeCallGivenUp } from './bounded-store-calls.js'
import { CliError } from './cli-error.js'
import { ExitCode } from './exit-code.js'
import { pgEnvironmentAtFault } from './pg-environment-at-fault.js'
import { hideSecrets, redactStoreUrl, type StoreTarget } from './store-url.js'

/**
 * How long any store may take to connect (or, for DynamoDB, to answer one request) before the command
 * fails with exit 1: mysql2's own default, which the other clients lack (pg waits forever).
 */
const CONNECT_TIMEOUT_MS = 10_000

/** A backend the command line opened, and how to let go of its connections. */
export interface OpenBackend {
  readonly backend: Backend
  /** Where it points, for headers, without credentials. */
  readonly label: string
  /** The label and the table (or collection): what a question or a message about one lease names. */
  readonly where: string
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

/**
 * The table (or collection) the URL names, else `--table`. Both naming one each is a mistake: the URL's
 * silently won, and a revoke ended a lease in another table than the one on the command line.
 */
function chosenTable(
  fromUrl: string | undefined,
  flag: string | undefined,
  what = 'table',
): string | undefined {
  if (fromUrl !== undefined && flag !== undefined && fromUrl !== flag) {
    throw new CliError(
      `the store URL names ${what} ${JSON.stringify(fromUrl)} and --table names ${JSON.stringify(flag)}: name it once`,
      ExitCode.USAGE,
    )
  }
  return fromUrl ?? flag
}

/** Opens the lease backend of a store; `table` is `--table`, used where the URL names none. */
export async function openBackend(target: StoreTarget, table: string | undefined): Promise<OpenBackend> {
  switch (target.kind) {
    case 'sqlite': {
      const name = chosenTable(target.table, table)
      const { existsSync } = await import('node:fs')
      if (!existsSync(target.file)) {
        throw new CliError(`no SQLite database at ${target.file}`, ExitCode.STORE_FAILED)
      }
      const [{ default: Database }, { Kysely, SqliteDialect }, { KyselyBackend, DEFAULT_TABLE }] =
        await Promise.all([
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
      return {
        backend: new KyselyBackend({ db, dialect: 'sqlite', ...(name ? { table: name } : {}) }),
        label: `sqlite:${target.file}`,
        where: `sqlite:${target.file}, table ${name ?? DEFAULT_TABLE}`,
        close: () => db.destroy(),
      }
    }
    case 'postgres': {
      const name = chosenTable(target.table, table)
      const [{ default: pg }, { Kysely, PostgresDialect }, { KyselyBackend, DEFAULT_TABLE }] =
        await Promise.all([client('pg', () => import('pg')), import('kysely'), import('@worklease/kysely')])
      // The pool parses its URL only when it first connects, where what pg refuses (verify-ca with
      // no sslrootcert under uselibpqcompat, a missing sslrootcert file) read as "the store failed".
      // A client parses it as it is made, and connects to nothing: what it rejects is a bad store URL.
      const parse = () => void new pg.Client({ connectionString: target.url })
      try {
        parse()
      } catch (error) {
        throw badStoreUrl('PostgreSQL', error, target.url, pgEnvironmentAtFault(parse))
      }
      const pool = new pg.Pool({
        connectionString: target.url,
        max: 1,
        connectionTimeoutMillis: CONNECT_TIMEOUT_MS,
      })
      // An idle connection the server drops (restart, pg_terminate_backend) emits 'error' on the pool,
      // which would crash `watch` between two reads; the pool has already discarded it, and the next
      // read connects afresh or fails with its own error.
      pool.on('error', () => undefined)
      // A connection in use that ends with no word from the server (a reset, a proxy restarting) emits
      // 'error' on its client, with no listener a crash with a stack trace, even after a revoke had
      // landed. The statement's own promise rejects with the same error, and that is reported.
      pool.on('connect', (client) => client.on('error', () => undefined))
      const db = new Kysely<unknown>({ dialect: new PostgresDialect({ pool }) })
      return {
        backend: new KyselyBackend({ db, dialect: 'postgres', ...(name ? { table: name } : {}) }),
        label: redactStoreUrl(target.url),
        where: `${redactStoreUrl(target.url)}, table ${name ?? DEFAULT_TABLE}`,
        close: () => db.destroy(),
      }
    }
    case 'mysql': {
      const name = chosenTable(target.table, table)
      const [{ createPool }, { Kysely, MysqlDialect }, { KyselyBackend, DEFAULT_TABLE }] = await Promise.all([
        client('mysql2', () => import('mysql2')),
        import('kysely'),
        import('@worklease/kysely'),
      ])
      const db = new Kysely<unknown>({
        dialect: new MysqlDialect({
          pool: createPool({ uri: target.url, connectionLimit: 1, connectTimeout: CONNECT_TIMEOUT_MS }),
        }),
      })
      return {
        backend: new KyselyBackend({ db, ...(name ? { table: name } : {}) }),
        label: redactStoreUrl(target.url),
        where: `${redactStoreUrl(target.url)}, table ${name ?? DEFAULT_TABLE}`,
        close: () => db.destroy(),
      }
    }
    case 'mongodb': {
      const named = chosenTable(target.collection, table, 'collection')
      const [{ MongoClient }, { MongoBackend, DEFAULT_LEASE_COLLECTION, validateCollectionName }] =
        await Promise.all([client('mongodb', () => import('mongodb')), import('@worklease/mongodb')])
      const collectionName = named ?? DEFAULT_LEASE_COLLECTION
      refuseMongoNames(target.database, collectionName, validateCollectionName)
      let mongo: InstanceType<typeof MongoClient>
      try {
        // The client parses its URL here, before any connection: what it rejects is a bad store URL.
        mongo = new MongoClient(target.url, {
          serverSelectionTimeoutMS: CONNECT_TIMEOUT_MS,
          connectTimeoutMS: CONNECT_TIMEOUT_MS,
        })
      } catch (error) {
        throw badStoreUrl('MongoDB', error, target.url)
      }
      const db = mongo.db(target.database)
      try {
        // Connecting first, under its own bound (server selection), so that a server that never
        // speaks is told apart from one that connects and then leaves a read unanswered.
        await mongo.connect()
        await mustExist(db, collectionName)
      } catch (error) {
        // A client still waiting for the unanswered read may keep close waiting too: the process ends
        // regardless (cli.ts), so close is not awaited then.
        const closed = mongo.close().catch(() => undefined)
        if (!storeCallGivenUp()) await closed
        throw error
      }
      const collection = db.collection(collectionName)
      return {
        backend: new MongoBackend({
          collection,
          ...(target.binarySizeProjection === undefined
            ? {}
            : { binarySizeProjection: target.binarySizeProjection }),
        }),
        label: redactStoreUrl(target.url),
        where: `${redactStoreUrl(target.url)}, collection ${collectionName}`,
        close: () => mongo.close(),
      }
    }
    case 'dynamodb': {
      const [{ DynamoDBClient }, { DynamoBackend }] = await Promise.all([
        client('@aws-sdk/client-dynamodb', () => import('@aws-sdk/client-dynamodb')),
        import('@worklease/dynamodb'),
      ])
      const tableName = chosenTable(target.table, table)
      if (!tableName) throw new CliError('DynamoDB needs a table: ?table=... or --table', ExitCode.USAGE)
      // What a client made with no options finds: the environment's and the profile's region and
      // keys, or a role's. Overriding them (a region of us-east-1, placeholder keys whenever an
      // endpoint was given) sent a profile's commands to another region's same-named table.
      const sdkDefaults = new DynamoDBClient({})
      const region =
        target.region ??
        (await sdkDefaults.config.region().catch(() => undefined)) ??
        (target.endpoint ? 'us-east-1' : undefined)
      if (!region) {
        sdkDefaults.destroy()
        throw new CliError(
          'no AWS region: give ?region= in the store URL, or set AWS_REGION or a profile with a region',
          ExitCode.USAGE,
        )
      }
      // An endpoint of one's own (DynamoDB Local, say) checks that requests are signed, not by whom:
      // with no keys to be found, placeholders sign them. Only then: a profile that is missing, wants
      // MFA or an SSO login fails the lookup too, and says so. The keys matter to DynamoDB Local all
      // the same (without -sharedDb it keeps a database per key and region). A loopback endpoint with
      // no keys anywhere (none named, no credentials or config file) skips the lookup, whose
      // instance-metadata try can take a second. AWS itself gets the SDK's lookup alone.
      const placeholders = { accessKeyId: 'worklease', secretAccessKey: 'worklease' }
      const named = process.env.AWS_PROFILE !== undefined || process.env.AWS_ACCESS_KEY_ID !== undefined
      const withPlaceholderKeys =
        target.endpoint !== undefined && !named && !awsFilesExist() && isLoopback(target.endpoint)
          ? async () => placeholders
          : () =>
              sdkDefaults.config.credentials().catch((error: unknown) => {
                if (named || !/from any providers/.test(String((error as Error)?.message))) throw error
                return placeholders
              })
      const dynamo = new DynamoDBClient({
        ...(target.endpoint ? { endpoint: target.endpoint } : {}),
        // Without these the SDK waits forever for an endpoint that accepts and never answers. Each
        // attempt is bounded; the SDK still retries (3 attempts by default).
        requestHandler: {
          connectionTimeout: CONNECT_TIMEOUT_MS,
          requestTimeout: CONNECT_TIMEOUT_MS,
          throwOnRequestTimeout: true,
        },
        region,
        ...(target.endpoint ? { credentials: withPlaceholderKeys } : {}),
      })
      const label = `dynamodb ${target.endpoint ?? 'AWS'} table ${tableName}`
      return {
        backend: new DynamoBackend({
          client: dynamo,
          table: tableName,
          ...(target.listIndex ? { listIndex: target.listIndex } : {}),
        }),
        label,
        // The label names the table already.
        where: label,
        close: async () => {
          dynamo.destroy()
          sdkDefaults.destroy()
        },
      }
    }
  }
}

/**
 * MongoDB's naming rules, which its client leaves to the server: a name no collection (or database)
 * can have failed only there, as "the store failed" or "does not exist", where the SQL stores' table
 * names are refused as usage before connecting. The collection is checked by the driver's own rules.
 */
function refuseMongoNames(
  database: string | undefined,
  collection: string,
  validateCollectionName: (name: unknown, label: string) => void,
): void {
  try {
    validateCollectionName(collection, 'collection')
  } catch (error) {
    if (isInvalidArgumentError(error)) throw new CliError(error.message, ExitCode.USAGE, { cause: error })
    throw error
  }
  if (database !== undefined && /[/\\. "$\0]/.test(database)) {
    throw new CliError(
      `database ${JSON.stringify(database)} is no MongoDB database name: it must not contain / \\ . " $, a space or U+0000`,
      ExitCode.USAGE,
    )
  }
}

/**
 * MongoDB creates a collection on first write and reads a missing one as empty, so a misspelled
 * collection or database would list "no leases" (exit 0). The SQL stores fail on a missing table
 * (exit 1), and so does this. `authorizedCollections` lets a user without `listCollections` on the
 * database see the collections it may read.
 */
async function mustExist(db: import('mongodb').Db, name: string): Promise<void> {
  // Bounded as the commands' reads are: a server that finished the handshake may never answer it.
  const found = await boundedStoreCall(
    (signal) =>
      raceAbort(
        db.listCollections({ name }, { nameOnly: true, authorizedCollections: true }).toArray(),
        signal,
      ),
    '',
  )
  if (found.length === 0) {
    throw new CliError(
      `the store failed: collection ${JSON.stringify(`${db.databaseName}.${name}`)} does not exist`,
      ExitCode.STORE_FAILED,
    )
  }
}

/**
 * What a client refused in a store URL as it parsed it, or in the environment variables it read with
 * it (`fromEnvironment`, when the URL alone would do): a usage error (exit 2), in one line, secrets
 * hidden.
 */
function badStoreUrl(
  store: string,
  error: unknown,
  url: string,
  fromEnvironment: readonly string[] = [],
): CliError {
  const reason = error instanceof Error ? (error.message.split('\n')[0] ?? '') : String(error)
  const what =
    fromEnvironment.length === 0
      ? `bad ${store} URL`
      : `the ${store} settings in the environment (${fromEnvironment.join(', ')}) do not go with the store URL`
  return new CliError(`${what}: ${hideSecrets(reason, url)}`, ExitCode.USAGE, { cause: error })
}

/** Whether the AWS SDK has a shared credentials or config file to read (a default profile, say). */
function awsFilesExist(): boolean {
  const home = homedir()
  return [
    process.env.AWS_SHARED_CREDENTIALS_FILE ?? join(home, '.aws', 'credentials'),
    process.env.AWS_CONFIG_FILE ?? join(home, '.aws', 'config'),
  ].some((file) => existsSync(file))
}

/** Whether an endpoint's host is this machine: a local emulator's, never AWS's. */
function isLoopback(endpoint: string): boolean {
  const host = new URL(endpoint).hostname
  return host === 'localhost' || host === '[::1]' || /^127\.\d+\.\d+\.\d+$/.test(host)
}
