import { DynamoDBClient, ListTablesCommand } from '@aws-sdk/client-dynamodb'
import { afterEach, expect, test } from 'vitest'
import {
  type DynaliteServer,
  dynaliteArgs,
  GENUINE_SERVERS,
  genuineServers,
  mongoServer,
  notSetReason,
  startDynalite,
} from '../src/index.mjs'

const started: DynaliteServer[] = []
afterEach(async () => {
  for (const server of started.splice(0)) await server.stop()
})

async function answers(endpoint: string): Promise<boolean> {
  const client = new DynamoDBClient({
    endpoint,
    region: 'us-east-1',
    credentials: { accessKeyId: 'worklease', secretAccessKey: 'worklease' },
  })
  try {
    const { TableNames } = await client.send(new ListTablesCommand({}))
    return Array.isArray(TableNames)
  } finally {
    client.destroy()
  }
}

test.each(['process', 'child'] as const)('dynalite in %s answers on 127.0.0.1', async (where) => {
  const server = await startDynalite({ in: where })
  started.push(server)
  expect(server.endpoint).toBe(`http://127.0.0.1:${server.port}`)
  expect(server.pid === process.pid).toBe(where === 'process')
  expect(await answers(server.endpoint)).toBe(true)
})

test('dynaliteArgs runs the CLI on loopback, on disk when given a path', () => {
  const args = dynaliteArgs({ port: 1234, path: '/tmp/x' })
  expect(args[0]).toMatch(/dynalite[/\\]cli\.js$/)
  expect(args.slice(1)).toEqual([
    '--host',
    '127.0.0.1',
    '--port',
    '1234',
    '--path',
    '/tmp/x',
    '--createTableMs',
    '0',
  ])
  expect(dynaliteArgs({ port: 1 })).not.toContain('--path')
})

test('genuineServers reads the variables servers.sh exports, and only those set', () => {
  expect(genuineServers({ MYSQL97_URL: 'mysql://a', FERRETDB2_URL: '', OTHER: 'x' })).toEqual({
    mysql97: 'mysql://a',
  })
  expect(Object.values(GENUINE_SERVERS)).toEqual([
    'MYSQL97_URL',
    'POSTGRES18_URL',
    'FERRETDB2_URL',
    'DYNAMODB_LOCAL_ENDPOINT',
  ])
  expect(notSetReason('MYSQL97_URL')).toBe(
    'MYSQL97_URL is not set (scripts/servers.sh start, then eval "$(scripts/servers.sh env)")',
  )
})

test('mongoServer prefers a genuine MongoDB, then FerretDB 2, and says which variable named it', () => {
  const mongo = 'mongodb://127.0.0.1:27017/'
  const ferret2 = 'mongodb://127.0.0.1:27018/'
  expect(mongoServer({ MONGODB_URL: mongo, FERRETDB2_URL: ferret2 })).toEqual({
    variable: 'MONGODB_URL',
    url: mongo,
  })
  expect(mongoServer({ MONGODB_URL: '', FERRETDB2_URL: ferret2 })).toEqual({
    variable: 'FERRETDB2_URL',
    url: ferret2,
  })
  expect(mongoServer({ OTHER: mongo })).toBeUndefined()
})
