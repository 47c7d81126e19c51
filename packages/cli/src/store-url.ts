import { CliError } from './cli-error.js'
import { ExitCode } from './exit-code.js'

/** A store named on the command line, with everything needed to open it. */
export type StoreTarget =
  | { readonly kind: 'sqlite'; readonly file: string; readonly table?: string }
  | { readonly kind: 'postgres' | 'mysql'; readonly url: string; readonly table?: string }
  | {
      readonly kind: 'mongodb'
      readonly url: string
      readonly database?: string
      readonly collection?: string
      /** `?binarySize=0`: list without `$binarySize` (FerretDB 1.x lacks it). */
      readonly binarySizeProjection?: boolean
    }
  | {
      readonly kind: 'dynamodb'
      readonly endpoint?: string
      readonly region?: string
      readonly table?: string
      /** `?listIndex=NAME`: the table's list index, without which DynamoDB cannot list. */
      readonly listIndex?: string
    }

/** The environment variables the test suites use, so `--store postgres` means the same server. */
const FROM_ENVIRONMENT: Record<string, string> = {
  postgres: 'POSTGRES_URL',
  mysql: 'MYSQL_URL',
  mongodb: 'MONGODB_URL',
  dynamodb: 'DYNAMODB_ENDPOINT',
}

const EXAMPLES =
  'sqlite:./leases.db, postgres://user@host/db, mysql://root@host/db, mongodb://host/db, ' +
  'dynamodb://host:port?region=us-east-1&table=leases&listIndex=worklease-list'

function usage(message: string): CliError {
  return new CliError(`${message} (examples: ${EXAMPLES})`, ExitCode.USAGE)
}

/** Takes our own query parameters off a URL, leaving the ones meant for the client. */
function takeParam(url: URL, ...names: string[]): string | undefined {
  let value: string | undefined
  for (const name of names) {
    value ??= url.searchParams.get(name) ?? undefined
    url.searchParams.delete(name)
  }
  return value
}

/**
 * Reads `--store`: a URL, or a bare kind (`postgres`, `mysql`, `mongodb`, `dynamodb`) that takes its
 * URL from the same environment variable the tests use. The lease table (or collection) comes from
 * `?table=` in the URL, else from `--table`, else the drivers' default.
 */
export function parseStoreUrl(text: string, env: NodeJS.ProcessEnv = process.env): StoreTarget {
  const trimmed = text.trim()
  if (trimmed === '') throw usage('--store is empty')
  const variable = FROM_ENVIRONMENT[trimmed]
  if (variable) {
    const value = env[variable]
    if (!value) throw usage(`--store ${trimmed} takes its URL from ${variable}, which is not set`)
    return trimmed === 'dynamodb' ? dynamo(value.replace(/^https?:/, 'dynamodb:')) : parseStoreUrl(value, {})
  }
  if (trimmed.startsWith('sqlite:')) {
    const rest = trimmed.slice('sqlite:'.length).replace(/^\/\//, '')
    const [file = '', query = ''] = rest.split('?', 2)
    if (file === '') throw usage(`no database file in ${JSON.stringify(text)}`)
    const table = new URLSearchParams(query).get('table') ?? undefined
    return { kind: 'sqlite', file, ...(table ? { table } : {}) }
  }
  let url: URL
  try {
    url = new URL(trimmed)
  } catch {
    throw usage(`${JSON.stringify(text)} is not a store URL`)
  }
  switch (url.protocol) {
    case 'postgres:':
    case 'postgresql:': {
      const table = takeParam(url, 'table')
      return { kind: 'postgres', url: url.toString(), ...(table ? { table } : {}) }
    }
    case 'mysql:':
    case 'mariadb:': {
      const table = takeParam(url, 'table')
      url.protocol = 'mysql:'
      return { kind: 'mysql', url: url.toString(), ...(table ? { table } : {}) }
    }
    case 'mongodb:':
    case 'mongodb+srv:': {
      const collection = takeParam(url, 'collection', 'table')
      const binarySize = takeParam(url, 'binarySize')
      const database = decodeURIComponent(url.pathname.replace(/^\//, '')) || undefined
      return {
        kind: 'mongodb',
        url: url.toString(),
        ...(database ? { database } : {}),
        ...(collection ? { collection } : {}),
        ...(binarySize === undefined ? {} : { binarySizeProjection: flag('binarySize', binarySize) }),
      }
    }
    case 'dynamodb:':
      return dynamo(trimmed)
    default:
      throw usage(`unknown store ${JSON.stringify(url.protocol.replace(/:$/, ''))}`)
  }
}

function dynamo(text: string): StoreTarget {
  const url = new URL(text)
  const region = takeParam(url, 'region')
  const table = takeParam(url, 'table')
  const listIndex = takeParam(url, 'listIndex')
  const tls = takeParam(url, 'tls') === '1'
  // dynamodb:// with no host means the SDK's own endpoint for the region (AWS itself).
  const endpoint = url.host ? `${tls ? 'https' : 'http'}://${url.host}` : undefined
  return {
    kind: 'dynamodb',
    ...(endpoint ? { endpoint } : {}),
    ...(region ? { region } : {}),
    ...(table ? { table } : {}),
    ...(listIndex ? { listIndex } : {}),
  }
}

/** A yes/no query parameter: `1`/`true` or `0`/`false`, anything else is a usage error. */
function flag(name: string, value: string): boolean {
  if (/^(1|true)$/i.test(value)) return true
  if (/^(0|false)$/i.test(value)) return false
  throw usage(`?${name}= takes 0 or 1, not ${JSON.stringify(value)}`)
}
