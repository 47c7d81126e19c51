import {
  DeleteTableCommand,
  type DynamoDBClient,
  GetItemCommand,
  UpdateItemCommand,
} from '@aws-sdk/client-dynamodb'
import { isWorkleaseError } from '@worklease/spec'
import { afterEach, beforeEach, expect, test } from 'vitest'
import { createLeaseTable, DynamoBackend, sendFenced } from '../src/index.js'
import {
  createTestTable,
  type DynamoTestTable,
  newClient,
  returnValuesOnConditionCheckFailure,
  uniqueTableName,
} from './dynamo-harness.js'
import { type LostReplyProxy, startLostReplyProxy } from './lost-reply-proxy.js'

// A conditional write applied by the server whose reply is lost on the way back. The SDK's default
// retry (maxAttempts 3) would resend it and get ConditionalCheckFailedException; the backend must
// instead report the lost reply as the network failure it is.

let table: DynamoTestTable
let proxy: LostReplyProxy
let client: DynamoDBClient
let backend: DynamoBackend
const clock = { now: () => 1_700_000_000_000 }

beforeEach(async () => {
  table = await createTestTable()
  proxy = await startLostReplyProxy(await endpointOf())
  // The client as users create it: the SDK's default retry settings.
  client = newClient({ endpoint: proxy.endpoint })
  expect(await client.config.maxAttempts()).toBeGreaterThan(1)
  backend = new DynamoBackend({
    client,
    table: table.tableName,
    clock,
    returnValuesOnConditionCheckFailure: returnValuesOnConditionCheckFailure(),
  })
})
afterEach(async () => {
  client.destroy()
  await proxy.close()
  await table.close()
})

async function endpointOf(): Promise<string> {
  const resolved = await table.admin.config.endpoint!()
  return `${resolved.protocol}//${resolved.hostname}${resolved.port ? `:${resolved.port}` : ''}${resolved.path}`
}

const stored = async (workId: string) =>
  (
    await table.admin.send(
      new GetItemCommand({
        TableName: table.tableName,
        Key: { workId: { S: workId } },
        ConsistentRead: true,
      }),
    )
  ).Item

test('control: with the SDK retry, a lost reply to an applied conditional write becomes ConditionalCheckFailed', async () => {
  proxy.loseNextReplies('UpdateItem')
  const error = await client
    .send(
      new UpdateItemCommand({
        TableName: table.tableName,
        Key: { workId: { S: 'job-1' } },
        UpdateExpression: 'SET #h = :h',
        ConditionExpression: 'attribute_not_exists(#h)',
        ExpressionAttributeNames: { '#h': 'holderId' },
        ExpressionAttributeValues: { ':h': { S: 'a' } },
      }),
    )
    .catch((e: unknown) => e)
  expect((error as Error).name).toBe('ConditionalCheckFailedException')
  expect(proxy.forwarded.UpdateItem).toBe(2)
  expect((await stored('job-1'))?.holderId?.S).toBe('a')
})

test('acquire whose reply is lost: a network error, not LEASE_HELD; the write did land', async () => {
  proxy.loseNextReplies('UpdateItem')
  const error = await backend.acquire('job-1', 'a', 60_000).catch((e: unknown) => e)
  expect(isWorkleaseError(error)).toBe(false)
  expect(error).toBeInstanceOf(Error)
  expect(proxy.forwarded.UpdateItem).toBe(1) // a single attempt
  const item = await stored('job-1')
  expect(item?.holderId?.S).toBe('a')
  expect(item?.fencingToken?.N).toBe('1')
})

test('renew whose reply is lost: a network error, and retrying it (the same token) succeeds', async () => {
  const record = await backend.acquire('job-1', 'a', 60_000)
  proxy.loseNextReplies('UpdateItem')
  const error = await backend.renew(record, 60_000).catch((e: unknown) => e)
  expect(isWorkleaseError(error)).toBe(false)
  expect(proxy.forwarded.UpdateItem).toBe(2) // acquire, then one renew attempt
  await backend.renew(record, 60_000)
})

test('checkpoint whose reply is lost: a network error, and the state did land', async () => {
  const record = await backend.acquire('job-1', 'a', 60_000)
  proxy.loseNextReplies('UpdateItem')
  const error = await backend.checkpoint(record, Uint8Array.of(1, 2, 3), 60_000).catch((e: unknown) => e)
  expect(isWorkleaseError(error)).toBe(false)
  expect(proxy.forwarded.UpdateItem).toBe(2)
  expect(await backend.readCheckpoint(record)).toEqual({ state: Uint8Array.of(1, 2, 3), cleanHandoff: true })
})

test('release whose reply is lost: a network error, not FENCED; the lease is free', async () => {
  const record = await backend.acquire('job-1', 'a', 60_000)
  proxy.loseNextReplies('UpdateItem')
  const error = await backend.release(record).catch((e: unknown) => e)
  expect(isWorkleaseError(error)).toBe(false)
  expect(proxy.forwarded.UpdateItem).toBe(2)
  expect((await stored('job-1'))?.released?.BOOL).toBe(true)
})

test('sendFenced whose reply is lost: a network error, never "refused, nothing changed"; the write did land', async () => {
  const key = { workId: { S: 'fenced-item' } }
  proxy.loseNextReplies('UpdateItem')
  const outcome = await sendFenced(
    client,
    {
      TableName: table.tableName,
      Key: key,
      UpdateExpression: 'SET #w = :w',
      ExpressionAttributeNames: { '#w': 'written' },
      ExpressionAttributeValues: { ':w': { S: 'token-1 write' } },
    },
    1n,
  ).then(
    (landed) => ({ landed }),
    (error: unknown) => ({ error }),
  )
  // With the SDK's retry the resend is refused by the fence the first attempt raised: `false`.
  expect(outcome).not.toEqual({ landed: false })
  expect(outcome).toHaveProperty('error')
  expect((await stored('fenced-item'))?.written).toEqual({ S: 'token-1 write' })
})

test('createLeaseTable with ifNotExists: false whose reply is lost: a network error, never "it exists"', async () => {
  const name = uniqueTableName()
  proxy.loseNextReplies('CreateTable')
  try {
    const error = await createLeaseTable(client, { table: name, ifNotExists: false }).then(
      () => undefined,
      (e: unknown) => e,
    )
    // With the SDK's retry the resend finds the table the first attempt made: ResourceInUseException,
    // which says someone else made it.
    expect((error as Error | undefined)?.name).not.toBe('ResourceInUseException')
    expect(error).toBeInstanceOf(Error)
    expect(proxy.forwarded.CreateTable).toBe(1)
  } finally {
    await table.admin.send(new DeleteTableCommand({ TableName: name })).catch(() => undefined)
  }
})

// Found by a review (session 40): a client made with cacheMiddleware: true resolves the middleware
// stack once per command class for sends without options, and reuses it. The app sent UpdateItem
// first, so the driver's single-attempt override was never applied: the SDK's retry came back.
test.each(['acquire', 'release', 'revoke', 'sendFenced'] as const)(
  'cacheMiddleware: true, the app sending UpdateItem first: a lost %s reply is a network error, sent once',
  async (operation) => {
    const cached = newClient({ endpoint: proxy.endpoint, cacheMiddleware: true })
    try {
      const driver = new DynamoBackend({
        client: cached,
        table: table.tableName,
        clock,
        returnValuesOnConditionCheckFailure: returnValuesOnConditionCheckFailure(),
      })
      await cached.send(
        new UpdateItemCommand({
          TableName: table.tableName,
          Key: { workId: { S: 'app-item' } },
          UpdateExpression: 'SET #v = :v',
          ExpressionAttributeNames: { '#v': 'v' },
          ExpressionAttributeValues: { ':v': { S: 'x' } },
        }),
      )
      const record = operation === 'acquire' ? undefined : await driver.acquire('job-1', 'a', 60_000)
      const sentBefore = proxy.forwarded.UpdateItem ?? 0
      proxy.loseNextReplies('UpdateItem')
      const call =
        operation === 'acquire'
          ? driver.acquire('job-1', 'a', 60_000)
          : operation === 'release'
            ? driver.release(record!)
            : operation === 'revoke'
              ? driver.revoke('job-1')
              : sendFenced(
                  cached,
                  {
                    TableName: table.tableName,
                    Key: { workId: { S: 'fenced-item' } },
                    UpdateExpression: 'ADD #n :one',
                    ExpressionAttributeNames: { '#n': 'n' },
                    ExpressionAttributeValues: { ':one': { N: '1' } },
                  },
                  1n,
                )
      // Before: acquire said LEASE_HELD naming its own holder, release FENCED, revoke false, each after
      // the write had landed; sendFenced applied its ADD twice.
      const error = await call.then(
        () => undefined,
        (e: unknown) => e,
      )
      expect(isWorkleaseError(error)).toBe(false)
      expect(error).toBeInstanceOf(Error)
      expect((proxy.forwarded.UpdateItem ?? 0) - sentBefore).toBe(1)
    } finally {
      cached.destroy()
    }
  },
)
