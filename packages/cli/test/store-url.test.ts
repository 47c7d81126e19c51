import { describe, expect, test } from 'vitest'
import { ExitCode } from '../src/exit-code.js'
import { openBackend } from '../src/open-backend.js'
import { hideSecrets, parseStoreUrl, redactStoreUrl } from '../src/store-url.js'

/** What a store URL or its label must never show. */
const SECRET = 'S3cretPW'

/** The message of what `act` throws, or a failure if it throws nothing. */
async function messageOf(act: () => unknown): Promise<{ message: string; exitCode: unknown }> {
  try {
    await act()
  } catch (error) {
    return { message: (error as Error).message, exitCode: (error as { exitCode?: unknown }).exitCode }
  }
  throw new Error('expected it to throw')
}

describe('parseStoreUrl', () => {
  test.each([
    ['sqlite:./leases.db', { kind: 'sqlite', file: './leases.db' }],
    ['sqlite:///tmp/x.db?table=jobs', { kind: 'sqlite', file: '/tmp/x.db', table: 'jobs' }],
    // A scheme is case-insensitive (RFC 3986), as the other stores' are through WHATWG URL.
    ['SQLite:./leases.db', { kind: 'sqlite', file: './leases.db' }],
    ['POSTGRES://u@h/db', { kind: 'postgres', url: 'postgres://u@h/db' }],
    ['postgres://u@h:5/db?table=t', { kind: 'postgres', url: 'postgres://u@h:5/db', table: 't' }],
    ['postgresql://u@h/db', { kind: 'postgres', url: 'postgresql://u@h/db' }],
    ['mariadb://root@h:3306/test', { kind: 'mysql', url: 'mysql://root@h:3306/test' }],
    [
      'mongodb://h:27017/app?collection=leases&directConnection=true',
      {
        kind: 'mongodb',
        url: 'mongodb://h:27017/app?directConnection=true',
        database: 'app',
        collection: 'leases',
      },
    ],
    [
      'dynamodb://127.0.0.1:8000?region=eu-west-1&table=leases',
      { kind: 'dynamodb', endpoint: 'http://127.0.0.1:8000', region: 'eu-west-1', table: 'leases' },
    ],
    ['dynamodb://?region=eu-west-1&table=leases', { kind: 'dynamodb', region: 'eu-west-1', table: 'leases' }],
    [
      'mongodb://h:27017/app?binarySize=0&directConnection=true',
      {
        kind: 'mongodb',
        url: 'mongodb://h:27017/app?directConnection=true',
        database: 'app',
        binarySizeProjection: false,
      },
    ],
    // A replica set's seed list: WHATWG URL refuses several hosts, the MongoDB client takes them.
    [
      'mongodb://u:p@a:27017,b:27017,[::1]:27019/app?replicaSet=rs0&collection=leases',
      {
        kind: 'mongodb',
        url: 'mongodb://u:p@a:27017,b:27017,[::1]:27019/app?replicaSet=rs0',
        database: 'app',
        collection: 'leases',
      },
    ],
    [
      'mongodb://h/app?binarySize=true',
      { kind: 'mongodb', url: 'mongodb://h/app', database: 'app', binarySizeProjection: true },
    ],
    [
      'dynamodb://127.0.0.1:8000?region=eu-west-1&table=leases&listIndex=worklease-list',
      {
        kind: 'dynamodb',
        endpoint: 'http://127.0.0.1:8000',
        region: 'eu-west-1',
        table: 'leases',
        listIndex: 'worklease-list',
      },
    ],
  ])('%s', (text, expected) => {
    expect(parseStoreUrl(text, {})).toEqual(expected)
  })

  test.each([
    'mongodb://app:pa$$w,rd@db.example:27017/app',
    'mongodb://app:x$&y,z@db.example/app',
    'mongodb://u:pa$&w,x@a:1,b:2/db',
  ])('%s: a "," or "$" in the password is neither a seed list nor a replacement pattern', (text) => {
    expect((parseStoreUrl(text, {}) as { url: string }).url).toBe(text)
  })

  test('a seed list comes out as the MongoDB client takes it, its label with no password', async () => {
    const { MongoClient } = await import('mongodb')
    const target = parseStoreUrl(`mongodb://u:${SECRET}@a:27017,b:27017/app?replicaSet=rs0`, {})
    // The client parses its URL when it is made, before any connection.
    await new MongoClient((target as { url: string }).url).close()
    expect(redactStoreUrl((target as { url: string }).url)).not.toContain(SECRET)
  })

  test('a bare kind reads the environment variable the tests use', () => {
    const env = {
      POSTGRES_URL: 'postgres://postgres@127.0.0.1:5432/test',
      DYNAMODB_ENDPOINT: 'http://127.0.0.1:8000',
    }
    expect(parseStoreUrl('postgres', env)).toEqual({ kind: 'postgres', url: env.POSTGRES_URL })
    expect(parseStoreUrl('dynamodb', env)).toEqual({ kind: 'dynamodb', endpoint: 'http://127.0.0.1:8000' })
  })

  test('the driver options never reach the client: a bare kind keeps them from its variable', () => {
    const env = {
      MONGODB_URL: 'mongodb://127.0.0.1:27017/test?binarySize=0&replicaSet=rs0',
      DYNAMODB_ENDPOINT: 'http://127.0.0.1:8000?table=leases&listIndex=by-id',
    }
    expect(parseStoreUrl('mongodb', env)).toEqual({
      kind: 'mongodb',
      url: 'mongodb://127.0.0.1:27017/test?replicaSet=rs0',
      database: 'test',
      binarySizeProjection: false,
    })
    expect(parseStoreUrl('dynamodb', env)).toEqual({
      kind: 'dynamodb',
      endpoint: 'http://127.0.0.1:8000',
      table: 'leases',
      listIndex: 'by-id',
    })
  })

  test.each([
    ['', /empty/],
    ['redis://localhost', /unknown store "redis"/],
    ['not a url', /not a store URL/],
    ['sqlite:', /no database file/],
    ['mysql', /MYSQL_URL, which is not set/],
    ['mongodb://h/app?binarySize=maybe', /binarySize= takes 0 or 1/],
  ])('%j is a usage error that shows examples', (text, message) => {
    expect(() => parseStoreUrl(text, {})).toThrow(expect.objectContaining({ exitCode: ExitCode.USAGE }))
    expect(() => parseStoreUrl(text, {})).toThrow(message)
    expect(() => parseStoreUrl(text, {})).toThrow(/examples: sqlite:/)
  })

  // Found by a review (session 39): the "//" check ran on --store only, and this read as AWS itself.
  test.each([['dynamodb:localhost:8000?listIndex=l'], ['http:localhost:8000']])(
    'a DYNAMODB_ENDPOINT with no "//" (%s) is a usage error, not AWS',
    (endpoint) => {
      expect(() => parseStoreUrl('dynamodb', { DYNAMODB_ENDPOINT: endpoint })).toThrow(/no "\/\/" after/)
    },
  )

  test('bare dynamodb keeps an https DYNAMODB_ENDPOINT https', () => {
    const env = { DYNAMODB_ENDPOINT: 'https://dynamodb.eu-west-1.amazonaws.com' }
    expect(parseStoreUrl('dynamodb', env)).toEqual({
      kind: 'dynamodb',
      endpoint: 'https://dynamodb.eu-west-1.amazonaws.com',
    })
  })

  // Found by a review: each was dropped from the endpoint without a word.
  test.each([
    ['http://ddb.internal:80?tls=1', /\?tls= is for a dynamodb:\/\/ URL/],
    ['https://ddb.internal?tls=0', /\?tls= is for a dynamodb:\/\/ URL/],
    ['http://gateway.internal:8080/ddb', /takes no path, not "\/ddb"/],
    ['http://key:S3cretPW@ddb.internal:8000', /takes no user or password/],
  ])('DYNAMODB_ENDPOINT=%s is a usage error, not an endpoint with a part dropped', (endpoint, message) => {
    const read = () => parseStoreUrl('dynamodb', { DYNAMODB_ENDPOINT: endpoint })
    expect(read).toThrow(expect.objectContaining({ exitCode: ExitCode.USAGE }))
    expect(read).toThrow(message)
    expect(read).not.toThrow(/S3cretPW/)
  })

  test('a dynamodb:// URL keeps the port it names, with tls=1 too', () => {
    expect(parseStoreUrl('dynamodb://ddb.internal:80?tls=1&table=t', {})).toEqual({
      kind: 'dynamodb',
      endpoint: 'https://ddb.internal:80',
      table: 't',
    })
  })

  test.each([
    ['postgres://admin:S3cretPW@127.0.0.1:99999/test', {}],
    ['postgres', { POSTGRES_URL: 'postgres://admin:S3cretPW@db host/test' }],
    ['mysql', { MYSQL_URL: 'mysql://root:S3cretPW@[::1/test' }],
    ['mongodb://admin:S3cretPW@h/%zz', {}],
  ])('a store URL %j that does not parse never shows its password', async (text, env) => {
    const { message, exitCode } = await messageOf(() => parseStoreUrl(text, env))
    expect(exitCode).toBe(ExitCode.USAGE)
    expect(message).not.toContain(SECRET)
    expect(message).toMatch(/:\*\*\*\*@/)
  })

  test.each([
    ['mongodb://h:27017/%zz', /percent-encoding/],
    ['postgres://u:%zz@h/db', /percent-encoding/],
    // mysql2 decodes the host itself, and threw "URI malformed" once connecting (exit 1).
    ['mysql://root@db%zz:3306/test', /percent-encoding in the host/],
    [
      'MONGODB://a:27017,b%zz:27017/app',
      /percent-encoding in the host of "MONGODB:\/\/a:27017,b%zz:27017\/app"/,
    ],
  ])('%j with a malformed percent escape is a usage error', (text, message) => {
    expect(() => parseStoreUrl(text, {})).toThrow(expect.objectContaining({ exitCode: ExitCode.USAGE }))
    expect(() => parseStoreUrl(text, {})).toThrow(message)
  })
})

describe('the store label', () => {
  test.each([
    ['postgres://admin:S3cretPW@127.0.0.1:1/db?password=S3cretPW&sslpassword=S3cretPW&application_name=x'],
    ['mysql://root:S3cretPW@127.0.0.1:1/db?password=S3cretPW&password2=S3cretPW'],
  ])('%s shows no password, in the user part or the query', async (url) => {
    // The SQL pools connect on the first query, so opening needs no server.
    const store = await openBackend(parseStoreUrl(url, {}), undefined)
    try {
      expect(store.label).not.toContain(SECRET)
      expect(store.label).toMatch(/password=\*\*\*\*/)
    } finally {
      await store.close()
    }
  })
})

describe('redactStoreUrl and hideSecrets', () => {
  test.each([
    [
      'mongodb://u:S3cretPW@h/db?authMechanism=MONGODB-AWS&authMechanismProperties=AWS_SESSION_TOKEN:S3cretPW',
    ],
    ['mongodb://h/db?tlsCertificateKeyFilePassword=S3cretPW&proxyPassword=S3cretPW'],
    ['postgres://u:S3c%2FretPW@h/db'],
    // mysql2 reads every parameter as JSON: a private key's passphrase under a plain name.
    ['mysql://root@h:3306/test?ssl={"passphrase":"S3cretPW","rejectUnauthorized":true}'],
    ['mysql://root@h:3306/test?ssl=%7B%22key%22%3A%22S3cretPW%22%7D'],
  ])('%s', (url) => {
    expect(redactStoreUrl(url)).not.toMatch(/S3c/)
    expect(hideSecrets(`the client said: ${url}`, url)).not.toMatch(/S3c/)
  })

  test('a value that only mentions a secret word is shown: a table named api_keys is no secret', () => {
    expect(redactStoreUrl('postgres://h/db?table=api_keys')).toBe('postgres://h/db?table=api_keys')
  })

  test('a URL that does not parse is masked up to its last "@"', () => {
    expect(redactStoreUrl('postgres://admin:S3c/ret@PW@db host/test')).toBe(
      'postgres://admin:****@db host/test',
    )
  })
})

describe('malformed MongoDB URLs', () => {
  test.each([
    ['mongodb://admin:S3cretPW@127.0.0.1:27018/test?authMechanism=BOGUS'],
    ['mongodb://admin:S3cretPW@127.0.0.1:27018/test?tls=maybe'],
  ])('%s is a bad store URL (usage), one line, no password', async (url) => {
    // The client parses its URL when it is created, before any connection.
    const { message, exitCode } = await messageOf(() => openBackend(parseStoreUrl(url, {}), undefined))
    expect(exitCode).toBe(ExitCode.USAGE)
    expect(message).not.toContain(SECRET)
    expect(message.split('\n')).toHaveLength(1)
  })
})
