import { CreateTableCommand, DescribeTableCommand } from '@aws-sdk/client-dynamodb'
import type { DynamoClient } from './dynamo-client.js'
import { validatePartitionKey, validateTableName } from './lease-item.js'

/** Options of {@link createLeaseTable}. */
export interface CreateLeaseTableOptions {
  /**
   * Name of the table to create.
   *
   * ```ts
   * await createLeaseTable(client, { tableName: 'leases' })
   * ```
   */
  tableName: string
  /**
   * Name of the string partition key attribute; pass the same to `DynamoBackend`. Default: `'workId'`.
   *
   * ```ts
   * await createLeaseTable(client, { tableName: 'leases', partitionKey: 'pk' })
   * ```
   */
  partitionKey?: string
  /**
   * Succeed without creating anything when the table already exists (it is not checked to have the
   * right key schema). Default: `false`, so an existing table is an error from DynamoDB.
   *
   * ```ts
   * await createLeaseTable(client, { tableName: 'leases', ifNotExists: true })
   * ```
   */
  ifNotExists?: boolean
  /**
   * How long to wait for the table to become `ACTIVE`, in milliseconds. Default: 300 000.
   *
   * ```ts
   * await createLeaseTable(client, { tableName: 'leases', timeoutMs: 60_000 })
   * ```
   */
  timeoutMs?: number
  /**
   * Gives up waiting (the table may still be created).
   *
   * ```ts
   * await createLeaseTable(client, { tableName: 'leases', signal: AbortSignal.timeout(30_000) })
   * ```
   */
  signal?: AbortSignal
}

/**
 * Creates a lease table with on-demand billing (a string partition key, nothing else) and waits until
 * it is `ACTIVE`. Do not enable DynamoDB's Time to Live on it: deleting an expired item would reset
 * its workId's fencing tokens.
 *
 * ```ts
 * import { DynamoDBClient } from '@aws-sdk/client-dynamodb'
 * import { createLeaseTable } from '@worklease/dynamodb'
 *
 * await createLeaseTable(new DynamoDBClient({}), { tableName: 'leases' })
 * ```
 */
export async function createLeaseTable(
  client: DynamoClient,
  options: CreateLeaseTableOptions,
): Promise<void> {
  const { tableName, partitionKey = 'workId', ifNotExists = false, timeoutMs = 300_000, signal } = options
  validateTableName(tableName)
  validatePartitionKey(partitionKey)
  const sendOptions = signal ? { abortSignal: signal } : undefined
  try {
    await client.send(
      new CreateTableCommand({
        TableName: tableName,
        AttributeDefinitions: [{ AttributeName: partitionKey, AttributeType: 'S' }],
        KeySchema: [{ AttributeName: partitionKey, KeyType: 'HASH' }],
        BillingMode: 'PAY_PER_REQUEST',
      }),
      sendOptions,
    )
  } catch (error) {
    // DynamoDB says ResourceInUseException both for an existing table and one being created.
    if (!(ifNotExists && error instanceof Error && error.name === 'ResourceInUseException')) throw error
  }
  const deadline = Date.now() + timeoutMs
  for (let delayMs = 20; ; delayMs = Math.min(delayMs * 2, 2_000)) {
    const { Table } = await client.send(new DescribeTableCommand({ TableName: tableName }), sendOptions)
    if (Table?.TableStatus === 'ACTIVE') return
    if (Date.now() + delayMs > deadline) {
      throw new Error(`table ${tableName} is still ${Table?.TableStatus} after ${timeoutMs} ms`)
    }
    await new Promise<void>((resolve, reject) => {
      const timer = setTimeout(resolve, delayMs)
      signal?.addEventListener(
        'abort',
        () => {
          clearTimeout(timer)
          reject(signal.reason)
        },
        { once: true },
      )
    })
    signal?.throwIfAborted()
  }
}
