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

/**
 * Takes one of our own query parameters off a URL (under any of its `names`), leaving the ones meant
 * for the client. Given twice, or under two names, it is a mistake, never a silent pick of one: a
 * revoke acted on whichever table came first.
 */
function takeParam(params: URLSearchParams, ...names: string[]): string | undefined {
  const given = names.filter((name) => params.has(name))
  if (given.length > 1) throw usage(`both ?${given[0]}= and ?${given[1]}= are given: give one`)
  let value: string | undefined
  for (const name of given) {
    const values = params.getAll(name)
    if (values.length > 1) throw usage(`?${name}= is given twice: give it once`)
    value = nonEmpty(name, values[0])
    params.delete(name)
  }
  return value
}

/** Where every parameter is ours (no client reads the rest): one left over is a mistake, never dropped. */
function refuseRest(params: URLSearchParams, where: string): void {
  const [name] = params.keys()
  if (name !== undefined) throw usage(`unknown parameter ${JSON.stringify(name)} in ${where}`)
}

/** A client parameter one edit or two from one of ours (`?tabel=`) is our parameter misspelled. */
function refuseMisspelled(url: URL, ours: readonly string[]): void {
  for (const name of new Set(url.searchParams.keys())) {
    const meant = ours.find((own) => name !== own && editDistance(name.toLowerCase(), own.toLowerCase()) <= 2)
    if (meant) throw usage(`unknown parameter ${JSON.stringify(name)}: did you mean ?${meant}=`)
  }
}

function editDistance(a: string, b: string): number {
  let previous = Array.from({ length: b.length + 1 }, (_, j) => j)
  for (let i = 1; i <= a.length; i++) {
    const row = [i]
    for (let j = 1; j <= b.length; j++) {
      row[j] = Math.min(previous[j]! + 1, row[j - 1]! + 1, previous[j - 1]! + (a[i - 1] === b[j - 1] ? 0 : 1))
    }
    previous = row
  }
  return previous[b.length]!
}

/**
 * `postgres:host/db` parses as a URL with no host (the rest is its path): the client would then
 * connect to its default server, and `dynamodb:host:port` to AWS itself. The message shows no part of
 * the URL, which may hold a password where no parser finds one.
 */
function requireAuthority(text: string, scheme: string): void {
  if (!text.slice(scheme.length).startsWith('//')) {
    throw usage(
      `no "//" after ${JSON.stringify(scheme)}: a store URL names its server as ${scheme}//host/...`,
    )
  }
}

/**
 * An empty `?table=` (a variable that was not set, say) is a mistake, not the default: read as the
 * default table, a `revoke` ended a lease in another table than the one meant.
 */
function nonEmpty(name: string, value: string | undefined): string | undefined {
  if (value === '') throw usage(`?${name}= is empty: name one, or leave the parameter out`)
  return value
}

/**
 * Reads `--store`: a URL, or a bare kind (`postgres`, `mysql`, `mongodb`, `dynamodb`) that takes its
 * URL from the same environment variable the tests use. The lease table (or collection) comes from
 * `?table=` in the URL, else from `--table`, else the drivers' default. Errors never show a password.
 */
export function parseStoreUrl(text: string, env: NodeJS.ProcessEnv = process.env): StoreTarget {
  const trimmed = text.trim()
  if (trimmed === '') throw usage('--store is empty')
  const variable = FROM_ENVIRONMENT[trimmed]
  if (variable) {
    const value = env[variable]
    if (!value) throw usage(`--store ${trimmed} takes its URL from ${variable}, which is not set`)
    try {
      return trimmed === 'dynamodb' ? dynamoFromEndpoint(value) : parseStoreUrl(value, {})
    } catch (error) {
      // Without the variable's name, a bad URL nobody typed would be hard to trace.
      if (error instanceof CliError)
        throw new CliError(`${variable}: ${error.message}`, error.exitCode, { cause: error })
      throw error
    }
  }
  // Any case: a scheme is case-insensitive, and `SQLite:` was refused as an unknown store "sqlite".
  if (/^sqlite:/i.test(trimmed)) {
    const rest = trimmed.slice('sqlite:'.length).replace(/^\/\//, '')
    const [file = '', query = ''] = rest.split('?', 2)
    if (file === '') throw usage(`no database file in ${JSON.stringify(redactStoreUrl(text))}`)
    const params = new URLSearchParams(query)
    const table = takeParam(params, 'table')
    // ?tabel= meant the default table.
    refuseRest(params, 'a sqlite: URL: it takes ?table= alone')
    return { kind: 'sqlite', file, ...(table ? { table } : {}) }
  }
  // WHATWG URL refuses a host list; parsed with one stand-in host, the list goes back in the URL.
  const seeds = seedListOf(trimmed)
  const url = parseUrl(seeds ? `${seeds.before}${SEED_STAND_IN}${seeds.after}` : trimmed)
  switch (url.protocol) {
    case 'postgres:':
    case 'postgresql:': {
      requireAuthority(trimmed, url.protocol)
      checkPercentEncoding(url)
      const table = takeParam(url.searchParams, 'table')
      refuseMisspelled(url, ['table'])
      return { kind: 'postgres', url: url.toString(), ...(table ? { table } : {}) }
    }
    case 'mysql:':
    case 'mariadb:': {
      requireAuthority(trimmed, url.protocol)
      checkPercentEncoding(url)
      const table = takeParam(url.searchParams, 'table')
      refuseMisspelled(url, ['table'])
      url.protocol = 'mysql:'
      return { kind: 'mysql', url: url.toString(), ...(table ? { table } : {}) }
    }
    case 'mongodb:':
    case 'mongodb+srv:': {
      requireAuthority(trimmed, url.protocol)
      checkPercentEncoding(url, seeds && { host: seeds.hosts, typed: trimmed })
      const collection = takeParam(url.searchParams, 'collection', 'table')
      const binarySize = takeParam(url.searchParams, 'binarySize')
      const database = decodeURIComponent(url.pathname.replace(/^\//, '')) || undefined
      return {
        kind: 'mongodb',
        // A function, so that `$` in the hosts is not read as a replacement pattern.
        url: seeds ? url.toString().replace(SEED_STAND_IN, () => seeds.hosts) : url.toString(),
        ...(database ? { database } : {}),
        ...(collection ? { collection } : {}),
        ...(binarySize === undefined ? {} : { binarySizeProjection: flag('binarySize', binarySize) }),
      }
    }
    case 'dynamodb:':
      requireAuthority(trimmed, url.protocol)
      return dynamo(url)
    default:
      throw usage(`unknown store ${JSON.stringify(url.protocol.replace(/:$/, ''))}`)
  }
}

const SEED_STAND_IN = 'seed-list.invalid'

/**
 * A MongoDB URL's seed list (`host1:27017,host2:27017`), which WHATWG URL refuses: the text before the
 * hosts, the hosts, the text after. The hosts are what follows the authority's last `@` (a password
 * may hold a `,`), up to its end; one host is no seed list.
 */
function seedListOf(text: string): { before: string; hosts: string; after: string } | undefined {
  const scheme = /^mongodb:\/\//i.exec(text)
  if (!scheme) return undefined
  const start = scheme[0].length
  const length = text.slice(start).search(/[/?#]/)
  const end = length < 0 ? text.length : start + length
  const hostsAt = start + text.slice(start, end).lastIndexOf('@') + 1
  const hosts = text.slice(hostsAt, end)
  return hosts.includes(',') ? { before: text.slice(0, hostsAt), hosts, after: text.slice(end) } : undefined
}

function parseUrl(text: string): URL {
  try {
    return new URL(text)
  } catch {
    throw usage(`${JSON.stringify(redactStoreUrl(text))} is not a store URL`)
  }
}

/**
 * The clients decode these parts themselves and fail with a bare "URI malformed" once connecting
 * (exit 1); a URL that cannot be decoded is the command line's fault (exit 2).
 */
function checkPercentEncoding(url: URL, seeds?: { host: string; typed: string }): void {
  const host = seeds?.host ?? url.hostname
  const parts = { 'user name': url.username, password: url.password, host, path: url.pathname }
  for (const [part, value] of Object.entries(parts)) {
    try {
      decodeURIComponent(value)
    } catch {
      throw usage(
        `malformed percent-encoding in the ${part} of ${JSON.stringify(redactStoreUrl(seeds?.typed ?? url.toString()))}`,
      )
    }
  }
}

/** DYNAMODB_ENDPOINT is the SDK's endpoint, `http://` or `https://`, which the endpoint keeps. */
function dynamoFromEndpoint(text: string): StoreTarget {
  const url = parseUrl(text)
  if (!['http:', 'https:', 'dynamodb:'].includes(url.protocol)) {
    throw usage(`${JSON.stringify(redactStoreUrl(text))} is not an http:// or https:// endpoint`)
  }
  requireAuthority(text.trim(), url.protocol)
  return dynamo(url)
}

function dynamo(url: URL): StoreTarget {
  const region = takeParam(url.searchParams, 'region')
  const table = takeParam(url.searchParams, 'table')
  const listIndex = takeParam(url.searchParams, 'listIndex')
  const tls = takeParam(url.searchParams, 'tls')
  refuseRest(url.searchParams, 'a DynamoDB URL (region, table, listIndex, tls)')
  // Each of these was dropped from the endpoint without a word: `http://h:80?tls=1` became
  // `https://h` (port 443), since a URL keeps no default port to carry over.
  if (tls !== undefined && url.protocol !== 'dynamodb:') {
    throw usage(`?tls= is for a dynamodb:// URL: an ${url.protocol}// endpoint says it in its scheme`)
  }
  if (url.username || url.password) {
    throw usage(
      'a DynamoDB endpoint takes no user or password: the SDK reads credentials from the environment',
    )
  }
  if (url.pathname !== '' && url.pathname !== '/') {
    throw usage(`a DynamoDB endpoint takes no path, not ${JSON.stringify(url.pathname)}`)
  }
  const https = url.protocol === 'https:' || (tls !== undefined && flag('tls', tls))
  // dynamodb:// with no host means the SDK's own endpoint for the region (AWS itself).
  const endpoint = url.host ? `${https ? 'https' : 'http'}://${url.host}` : undefined
  return {
    kind: 'dynamodb',
    ...(endpoint ? { endpoint } : {}),
    ...(region ? { region } : {}),
    ...(table ? { table } : {}),
    ...(listIndex ? { listIndex } : {}),
  }
}

const MASK = '****'

/**
 * Query parameters that carry a secret: pg's `password` and `sslpassword`, mysql2's `password1`-`3`,
 * MongoDB's `tlsCertificateKeyFilePassword`, `proxyPassword` and `authMechanismProperties` (which may
 * hold an AWS session token), and any `...secret...` or `...token...` a client may grow.
 */
const SECRET_PARAMETER = /pass|pwd|secret|token|credential|authmechanismproperties/i

/**
 * A value that names a secret inside itself, as a JSON key: mysql2 reads every parameter as JSON, so
 * `ssl={"key":...,"passphrase":...}` carries a private key and its passphrase under a plain name.
 * Only as a key: a table named `api_keys` is no secret.
 */
const SECRET_VALUE = /"[^"]*(pass|pwd|secret|token|credential|key|pfx)[^"]*"\s*:/i

const isSecretParameter = (name: string, value: string) =>
  SECRET_PARAMETER.test(name) || SECRET_VALUE.test(value)

/**
 * A store URL fit to print: the password and every secret-bearing query parameter masked. Text that
 * does not parse as a URL is masked by pattern, erring towards hiding too much.
 */
export function redactStoreUrl(text: string): string {
  let url: URL
  try {
    url = new URL(text)
  } catch {
    return hideSecrets(text, text)
  }
  if (url.password) url.password = MASK
  for (const name of new Set(url.searchParams.keys())) {
    if (url.searchParams.getAll(name).some((value) => isSecretParameter(name, value)))
      url.searchParams.set(name, MASK)
  }
  return url.toString()
}

/** `message` with every secret of `storeUrl` masked, for client errors that echo what they were given. */
export function hideSecrets(message: string, storeUrl: string): string {
  const longestFirst = secretsIn(storeUrl).sort((a, b) => b.length - a.length)
  return longestFirst.reduce((hidden, secret) => hidden.replaceAll(secret, MASK), message)
}

/** The password and secret parameter values of a store URL, as typed and decoded. */
function secretsIn(text: string): string[] {
  const typed: string[] = []
  // Up to the last '@': a password with an unescaped '/', '?' or '@' is still all hidden.
  const userinfo = /^[a-z][a-z0-9+.-]*:\/\/[^:@/?#]*:(.*)@/is.exec(text)
  if (userinfo?.[1]) typed.push(userinfo[1])
  try {
    const { password } = new URL(text)
    if (password) typed.push(password)
  } catch {
    // Not a URL: the pattern above is all there is.
  }
  for (const [, name = '', value = ''] of text.matchAll(/[?&;]([^=&#]*)=([^&#]*)/g)) {
    if (value && isSecretParameter(name, safeDecode(value) ?? value)) typed.push(value)
  }
  const decoded = typed.flatMap((secret) => {
    const plain = safeDecode(secret)
    const plus = safeDecode(secret.replaceAll('+', ' '))
    return plain === undefined || plus === undefined ? [] : [plain, plus]
  })
  return [...new Set([...typed, ...decoded])].filter((secret) => secret !== '')
}

function safeDecode(text: string): string | undefined {
  try {
    return decodeURIComponent(text)
  } catch {
    return undefined
  }
}

/** A yes/no query parameter: `1`/`true` or `0`/`false`, anything else is a usage error. */
function flag(name: string, value: string): boolean {
  if (/^(1|true)$/i.test(value)) return true
  if (/^(0|false)$/i.test(value)) return false
  throw usage(`?${name}= takes 0 or 1, not ${JSON.stringify(value)}`)
}
