import { createRequire } from 'node:module'
import { performance } from 'node:perf_hooks'
import { CreateTableCommand, DeleteTableCommand, DynamoDBClient } from '@aws-sdk/client-dynamodb'
import { DynamoDBDocument } from '@aws-sdk/lib-dynamodb'
import { dynamoDBLockClientFactory, type Lock, LockNotGrantedError } from '@deliveryhero/dynamodb-lock'
import { createLeaseTable, DynamoBackend } from '@worklease/dynamodb'
import { countingAgent } from './counting.js'
import type { LockSide } from './lock-side.js'
import { packageVersion } from './package-version.js'
import { workleaseDriverSide, workleaseSide } from './worklease-side.js'

const require = createRequire(import.meta.url)
// aws-sdk v2 prints an end-of-support notice on load; it is installed only as dynamodb-lock-client's SDK.
process.env.AWS_SDK_JS_SUPPRESS_MAINTENANCE_MODE_MESSAGE ??= '1'
// aws-sdk v2: what dynamodb-lock-client is written against (callback DocumentClient).
const AWS = require('aws-sdk') as {
  DynamoDB: { DocumentClient: new (options: Record<string, unknown>) => unknown }
}
const DynamoDBLockClient = require('dynamodb-lock-client') as {
  FailOpen: new (
    config: Record<string, unknown>,
  ) => {
    acquireLock(id: string, callback: (error: Error | undefined, lock: DllLock) => void): void
  }
}
interface DllLock {
  release(callback: (error?: Error) => void): void
}

const credentials = { accessKeyId: 'worklease', secretAccessKey: 'worklease' }
const POOL = 16

/**
 * worklease's DynamoDB driver, dynamodb-lock-client (FailOpen, aws-sdk v2 DocumentClient as its users
 * install it) and @deliveryhero/dynamodb-lock (SDK v3 DocumentClient), each with its own client and
 * keep-alive agent (16 sockets) on the same endpoint, each on its own table.
 */
export async function openDynamoSides(
  endpoint: string,
  prefix: string,
): Promise<{ server: string; notes: string[]; sides: LockSide[] }> {
  const v3 = (maxSockets: number) => {
    const counted = countingAgent(maxSockets)
    const client = new DynamoDBClient({
      endpoint,
      region: 'us-east-1',
      credentials,
      requestHandler: { httpAgent: counted.agent },
    })
    return { client, count: counted.count }
  }
  const admin = v3(1).client
  const tables = {
    worklease: `${prefix}-wl`,
    dll: `${prefix}-dll`,
    dh: `${prefix}-dh`,
  }
  await createLeaseTable(admin, { table: tables.worklease })
  await admin.send(
    new CreateTableCommand({
      TableName: tables.dll,
      AttributeDefinitions: [{ AttributeName: 'id', AttributeType: 'S' }],
      KeySchema: [{ AttributeName: 'id', KeyType: 'HASH' }],
      BillingMode: 'PAY_PER_REQUEST',
    }),
  )
  await admin.send(
    new CreateTableCommand({
      TableName: tables.dh,
      AttributeDefinitions: [
        { AttributeName: 'lockId', AttributeType: 'S' },
        { AttributeName: 'lockGroup', AttributeType: 'S' },
      ],
      KeySchema: [
        { AttributeName: 'lockId', KeyType: 'HASH' },
        { AttributeName: 'lockGroup', KeyType: 'RANGE' },
      ],
      BillingMode: 'PAY_PER_REQUEST',
    }),
  )
  const sides: LockSide[] = []
  const clients: DynamoDBClient[] = [admin]

  const wl = v3(POOL)
  const drv = v3(POOL)
  clients.push(wl.client, drv.client)
  // dynalite ignores ReturnValuesOnConditionCheckFailure, as in the dynalite target.
  const backend = (client: DynamoDBClient) =>
    new DynamoBackend({
      client,
      table: tables.worklease,
      returnValuesOnConditionCheckFailure: false,
      renewMany: false,
    })
  sides.push(workleaseSide(backend(wl.client), wl.count, 'requests', 'worklease Leaser'))
  sides.push(workleaseDriverSide(backend(drv.client), drv.count, 'requests', 'worklease driver'))

  // dynamodb-lock-client FailOpen: the variant with a lease (leaseDurationMs) and a fencing token.
  {
    const counted = countingAgent(POOL)
    const documentClient = new AWS.DynamoDB.DocumentClient({
      endpoint,
      region: 'us-east-1',
      credentials,
      httpOptions: { agent: counted.agent },
    })
    const failOpen = (leaseDurationMs: number, retryCount: number, heartbeat: boolean) =>
      new DynamoDBLockClient.FailOpen({
        dynamodb: documentClient,
        lockTable: tables.dll,
        partitionKey: 'id',
        leaseDurationMs,
        retryCount,
        ...(heartbeat ? { heartbeatPeriodMs: Math.floor(leaseDurationMs / 3) } : {}),
      })
    const acquire = (client: ReturnType<typeof failOpen>, key: string) =>
      new Promise<DllLock>((resolve, reject) =>
        client.acquireLock(key, (error, lock) => (error ? reject(error) : resolve(lock))),
      )
    const clientsByTtl = new Map<string, ReturnType<typeof failOpen>>()
    const cached = (ttl: number, retries: number, heartbeat: boolean) => {
      const id = `${ttl}/${retries}/${heartbeat}`
      let client = clientsByTtl.get(id)
      if (!client) {
        client = failOpen(ttl, retries, heartbeat)
        clientsByTtl.set(id, client)
      }
      return client
    }
    sides.push({
      label: `dynamodb-lock-client ${packageVersion('dynamodb-lock-client')} (FailOpen, aws-sdk v2)`,
      semantics:
        "fencing token; lease with heartbeat; the waiter cannot tell a lease's age (trustLocalTime off), so it waits a full lease from its read; release rewrites the item (lease 1 ms)",
      waiting: 'reads, sleeps leaseDurationMs, then a conditional put (retryCount times)',
      doesLess:
        'nothing on the store (it reads before it writes: 3 requests per cycle to 2); no local deadline and no per-call timeout',
      roundTripUnit: 'requests',
      async tryAcquire(key, ttlMs) {
        // retryCount 0: one read and, if the item exists, a wait of its lease before one put. A
        // free key that was released before has a 1 ms lease left behind: that wait is 1 ms.
        try {
          return await acquire(cached(ttlMs, 0, true), key)
        } catch (error) {
          if ((error as { code?: string }).code === 'FailedToAcquireLock') return null
          throw error
        }
      },
      release: (lock: DllLock) =>
        new Promise<void>((resolve, reject) => lock.release((error) => (error ? reject(error) : resolve()))),
      waitAcquire: (key, ttlMs) => acquire(cached(ttlMs, 1_000_000, true), key),
      async crash(key, ttlMs) {
        const start = performance.now()
        await acquire(cached(ttlMs, 0, false), key)
        return { freeAt: start + ttlMs }
      },
      roundTrips: counted.count,
      close: async () => counted.agent.destroy(),
    } as LockSide<DllLock>)
  }

  // @deliveryhero/dynamodb-lock: record version number, prolonged lease, steal after a lease duration.
  {
    const dh = v3(POOL)
    clients.push(dh.client)
    const lockClient = dynamoDBLockClientFactory(DynamoDBDocument.from(dh.client), {
      tableName: tables.dh,
    })
    sides.push({
      label: `@deliveryhero/dynamodb-lock ${packageVersion('@deliveryhero/dynamodb-lock')}`,
      semantics:
        'no fencing token (record version number, not monotonic); lease prolonged by a timer; release deletes the item; the waiter waits a full lease from its read (trustLocalTime off)',
      waiting:
        "reads, sleeps the holder's leaseDurationInMs, then a conditional update (maxRetryCount, default unbounded)",
      doesLess:
        'nothing on the store (it reads before it writes: 3 requests per cycle to 2); no token, no local deadline, no per-call timeout',
      roundTripUnit: 'requests',
      async tryAcquire(key, ttlMs) {
        try {
          return await lockClient.lock('bench', key, {
            leaseDurationInMs: ttlMs,
            prolongEveryMs: Math.floor(ttlMs / 4),
            maxRetryCount: 0,
            waitDurationInMs: 0,
            trustLocalTime: true,
          })
        } catch (error) {
          if (error instanceof LockNotGrantedError) return null
          throw error
        }
      },
      release: (lock: Lock) => lockClient.releaseLock(lock),
      waitAcquire: (key, ttlMs) =>
        lockClient.lock('bench', key, { leaseDurationInMs: ttlMs, prolongEveryMs: Math.floor(ttlMs / 4) }),
      async crash(key, ttlMs) {
        const start = performance.now()
        await lockClient.lock('bench', key, { leaseDurationInMs: ttlMs, prolongLeaseEnabled: false })
        return { freeAt: start + ttlMs }
      },
      roundTrips: dh.count,
      close: async () => undefined,
    } as LockSide<Lock>)
  }

  const closeSides = sides.map((side) => side.close.bind(side))
  sides.forEach((side, index) => {
    ;(side as { close: () => Promise<void> }).close = async () => {
      await closeSides[index]!()
      if (index === sides.length - 1) {
        for (const TableName of Object.values(tables))
          await admin.send(new DeleteTableCommand({ TableName })).catch(() => undefined)
        for (const client of clients) client.destroy()
      }
    }
  })
  return {
    server: `DynamoDB API at ${endpoint}`,
    notes: ['a client per side, keep-alive agent with 16 sockets; round trips = HTTP requests through it'],
    sides,
  }
}
