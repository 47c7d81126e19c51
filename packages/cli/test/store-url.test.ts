import { describe, expect, test } from 'vitest'
import { ExitCode } from '../src/exit-code.js'
import { parseStoreUrl } from '../src/store-url.js'

describe('parseStoreUrl', () => {
  test.each([
    ['sqlite:./leases.db', { kind: 'sqlite', file: './leases.db' }],
    ['sqlite:///tmp/x.db?table=jobs', { kind: 'sqlite', file: '/tmp/x.db', table: 'jobs' }],
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
})
