import { randomUUID } from 'node:crypto'
import {
  DeleteTableCommand,
  DynamoDBClient,
  type DynamoDBClientConfig,
  PutItemCommand,
} from '@aws-sdk/client-dynamodb'
import type { Clock } from '@worklease/spec'
import { type BackendFactory, type BackendHarness, RoundTripFailer } from '@worklease/testkit'
import { inject } from 'vitest'
import { createLeaseTable, DynamoBackend, type DynamoBackendOptions } from '../src/index.js'

/** The endpoint the global setup started (dynalite) or was given (`DYNAMODB_ENDPOINT`). */
export const endpoint = (): string => inject('dynamoEndpoint')

/**
 * dynalite ignores `ReturnValuesOnConditionCheckFailure`; a real endpoint is assumed to support it
 * unless `DYNAMODB_RETURN_VALUES_ON_CCF=0`.
 */
export const returnValuesOnConditionCheckFailure = (): boolean =>
  !inject('dynamoIsDynalite') && process.env.DYNAMODB_RETURN_VALUES_ON_CCF !== '0'

/**
 * A client of the test endpoint. With dynalite, a dummy region and credentials (it checks that
 * requests are signed, not by whom); with `DYNAMODB_ENDPOINT`, whatever the environment configures.
 */
export function newClient(config: DynamoDBClientConfig = {}): DynamoDBClient {
  const dummy = inject('dynamoIsDynalite') || !process.env.AWS_ACCESS_KEY_ID
  return new DynamoDBClient({
    endpoint: endpoint(),
    region: process.env.AWS_REGION ?? 'us-east-1',
    ...(dummy ? { credentials: { accessKeyId: 'worklease', secretAccessKey: 'worklease' } } : {}),
    ...config,
  })
}

/** Counts the HTTP requests a client sends (after the retry step, so every attempt counts). */
export function countRequests(client: DynamoDBClient, onRequest: (target: string) => void): void {
  client.middlewareStack.add(
    (next, context) => (args) => {
      onRequest(context.commandName ?? '?')
      return next(args)
    },
    { step: 'finalizeRequest', priority: 'low', name: 'worklease-test-request-count' },
  )
}

/**
 * What the SDK's Node HTTP handler rejects with when the connection under a request is reset: the
 * socket's error, renamed `TimeoutError` (the name the SDK gives ECONNRESET, EPIPE and ETIMEDOUT).
 */
export function droppedConnectionError(): Error {
  return Object.assign(new Error('read ECONNRESET (injected by the test harness)'), {
    name: 'TimeoutError',
    code: 'ECONNRESET',
    errno: -104,
    syscall: 'read',
  })
}

/**
 * `BackendHarness.failNextCall` for DynamoDB: `install(client)` adds a middleware in the
 * `finalizeRequest` step, after signing and just before the HTTP handler, where a dropped connection
 * fails; after `failNextCall()`, the next request of any installed client throws
 * {@link droppedConnectionError} there instead of being sent. Install it before
 * {@link countRequests}, so the request that never left is not counted. Inside the SDK's retry step
 * like a real network error, so it reaches the caller only for a command sent as a single attempt,
 * as the backend sends each of its own.
 */
export function requestFailer(): {
  install(client: DynamoDBClient): void
  failNextCall(skipRoundTrips?: number): void
} {
  const failer = new RoundTripFailer()
  return {
    install(client) {
      client.middlewareStack.add(
        (next) => (args) => (failer.take() ? Promise.reject(droppedConnectionError()) : next(args)),
        { step: 'finalizeRequest', priority: 'low', name: 'worklease-test-fail-next-request' },
      )
    },
    failNextCall: (skipRoundTrips) => failer.failNextCall(skipRoundTrips),
  }
}

export const uniqueTableName = (): string => `worklease-test-${randomUUID()}`

/** A table of its own, plus clients opened over it; `roundTrips()` counts their requests. */
export interface DynamoTestTable extends BackendHarness {
  readonly tableName: string
  readonly admin: DynamoDBClient
  open(options: { clock: Clock }, overrides?: Partial<DynamoBackendOptions>): DynamoBackend
  roundTrips(): number
  seedToken(workId: string, token: bigint): Promise<void>
  /** Requests by command name, e.g. `{ UpdateItemCommand: 3 }`. */
  requests(): Record<string, number>
}

/**
 * Each test case gets its own table (dynalite creates one in well under a millisecond; against AWS
 * this is slow but keeps cases independent). Each `open()` is a separate process: its own
 * `DynamoDBClient` (own sockets) and its own clock.
 */
/** The list index every test table has, so the testkit's list group runs. */
export const TEST_LIST_INDEX = 'worklease-list'

export async function createTestTable(options: { partitionKey?: string } = {}): Promise<DynamoTestTable> {
  const admin = newClient()
  const tableName = uniqueTableName()
  const { partitionKey } = options
  await createLeaseTable(admin, {
    table: tableName,
    listIndex: TEST_LIST_INDEX,
    ...(partitionKey ? { partitionKey } : {}),
  })
  const clients: DynamoDBClient[] = []
  const byCommand: Record<string, number> = {}
  let total = 0
  const failer = requestFailer()
  return {
    tableName,
    admin,
    open({ clock }, overrides = {}) {
      const client = newClient()
      failer.install(client)
      countRequests(client, (name) => {
        total++
        byCommand[name] = (byCommand[name] ?? 0) + 1
      })
      clients.push(client)
      return new DynamoBackend({
        client,
        table: tableName,
        clock,
        returnValuesOnConditionCheckFailure: returnValuesOnConditionCheckFailure(),
        renewMany: !inject('dynamoIsDynalite'),
        listIndex: TEST_LIST_INDEX,
        ...(partitionKey ? { partitionKey } : {}),
        ...overrides,
      })
    },
    // A released item at `token`, as if `token` acquires had come before (the next one is a clean
    // handoff). Straight into the table, not counted as a round trip of the backend.
    async seedToken(workId, token) {
      await admin.send(
        new PutItemCommand({
          TableName: tableName,
          Item: {
            [partitionKey ?? 'workId']: { S: workId },
            fencingToken: { N: String(token) },
            holderId: { S: 'seeded' },
            expiresAt: { N: '0' },
            released: { BOOL: true },
            cleanHandoff: { BOOL: true },
            listKey: { S: 'lease' },
          },
        }),
      )
    },
    failNextCall: failer.failNextCall,
    roundTrips: () => total,
    requests: () => ({ ...byCommand }),
    async close() {
      for (const client of clients) client.destroy()
      try {
        await admin.send(new DeleteTableCommand({ TableName: tableName }))
      } finally {
        admin.destroy()
      }
    },
  }
}

/** The factory the conformance suite takes. */
export const dynamoFactory: BackendFactory = () => createTestTable()
