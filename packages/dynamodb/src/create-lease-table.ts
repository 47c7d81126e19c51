import { CreateTableCommand, DescribeTableCommand } from '@aws-sdk/client-dynamodb'
import { InvalidArgumentError, raceAbort, readOnce, validateCallOptions } from '@worklease/spec'
import type { DynamoClient } from './dynamo-client.js'
import {
  Attr,
  LIST_INDEX_ATTRIBUTES,
  validateListIndex,
  validatePartitionKey,
  validateTableName,
} from './lease-item.js'
import { sendOptions as optionsOf, singleAttempt } from './single-attempt.js'

/** The table {@link createLeaseTable} creates unless told otherwise. */
export const DEFAULT_LEASE_TABLE = 'worklease_leases'

/** Options of {@link createLeaseTable}. */
export interface CreateLeaseTableOptions {
  /**
   * Name of the table to create; `DynamoBackend` takes it as `table` too (the helper's result
   * carries it there). Default: `'worklease_leases'`.
   *
   * ```ts
   * await createLeaseTable(client, { table: 'leases' })
   * ```
   */
  table?: string
  /**
   * Name of the string partition key attribute; pass the same to `DynamoBackend`. Default: `'workId'`.
   *
   * ```ts
   * await createLeaseTable(client, { table: 'leases', partitionKey: 'pk' })
   * ```
   */
  partitionKey?: string
  /**
   * Succeed without creating anything when the table already exists (it is not checked to have the
   * right key schema), so the helper is safe to call at every start. Default: `true`; `false` makes an
   * existing table DynamoDB's `ResourceInUseException`, and sends the create once (a lost reply is
   * then the network error, not the SDK's retry finding the table it made).
   *
   * ```ts
   * await createLeaseTable(client, { table: 'leases', ifNotExists: false }) // throws if it exists
   * ```
   */
  ifNotExists?: boolean
  /**
   * Also create a global secondary index of this name for `DynamoBackend.list` (pass the same name to
   * the backend): partition key `listKey` (the same value on every lease), sort key the workId,
   * projecting the few attributes a listing shows. Default: none, and `list` is unavailable.
   *
   * It has a cost: every write that changes a lease's holder, token, expiry or checkpoint size (every
   * acquire, renew, checkpoint and release) is written to the index too, so writes cost about twice
   * as much, and the index's single partition key caps them at what one partition takes (about
   * 1 000 writes a second; beyond that DynamoDB throttles the table's writes too). See the README.
   *
   * ```ts
   * await createLeaseTable(client, { table: 'leases', listIndex: 'worklease-list' })
   * ```
   */
  listIndex?: string
  /**
   * How long to wait for the table to become `ACTIVE`, in milliseconds. Default: 300 000.
   *
   * ```ts
   * await createLeaseTable(client, { table: 'leases', timeoutMs: 60_000 })
   * ```
   */
  timeoutMs?: number
  /**
   * Gives up waiting, rejecting with its reason (the table may still be created). The call keeps no
   * listener on it once it settled, however long the table takes to become `ACTIVE`.
   *
   * ```ts
   * await createLeaseTable(client, { table: 'leases', signal: AbortSignal.timeout(30_000) })
   * ```
   */
  signal?: AbortSignal
}

/** What {@link createLeaseTable} returns: the `DynamoBackend` options that reach the table it made. */
export interface CreatedLeaseTable {
  /**
   * The table's name, as `DynamoBackend` takes it.
   *
   * ```ts
   * const backend = new DynamoBackend({ client, ...(await createLeaseTable(client, { table: 'leases' })) })
   * ```
   */
  table: string
  /**
   * The partition key attribute the table was created with.
   *
   * ```ts
   * const { partitionKey } = await createLeaseTable(client, { partitionKey: 'pk' }) // 'pk'
   * ```
   */
  partitionKey: string
  /**
   * The list index, when one was asked for.
   *
   * ```ts
   * const { listIndex } = await createLeaseTable(client, { listIndex: 'worklease-list' })
   * ```
   */
  listIndex?: string
}

/**
 * The global secondary index `DynamoBackend.list` queries, as `CreateTable` and `UpdateTable` take it
 * (with on-demand billing; give it `ProvisionedThroughput` on a provisioned table). DynamoDB orders a
 * string sort key by its UTF-8 bytes, which is the code point order `list` promises.
 *
 * ```ts
 * import { UpdateTableCommand } from '@aws-sdk/client-dynamodb'
 *
 * // Adds the index to an existing table; DynamoDB backfills it from every item that has a listKey.
 * await client.send(new UpdateTableCommand({
 *   TableName: 'leases',
 *   AttributeDefinitions: [{ AttributeName: 'listKey', AttributeType: 'S' }, { AttributeName: 'workId', AttributeType: 'S' }],
 *   GlobalSecondaryIndexUpdates: [{ Create: listIndexDefinition('worklease-list') }],
 * }))
 * ```
 */
export function listIndexDefinition(listIndex: string, partitionKey = 'workId') {
  validateListIndex(listIndex)
  validatePartitionKey(partitionKey)
  return {
    IndexName: listIndex,
    KeySchema: [
      { AttributeName: Attr.listKey, KeyType: 'HASH' as const },
      { AttributeName: partitionKey, KeyType: 'RANGE' as const },
    ],
    Projection: { ProjectionType: 'INCLUDE' as const, NonKeyAttributes: [...LIST_INDEX_ATTRIBUTES] },
  }
}

/**
 * Creates a lease table with on-demand billing (a string partition key, and the list index if
 * `listIndex` is given) unless it exists, waits until it is `ACTIVE`, and returns the `DynamoBackend`
 * options that reach it. Shaped like every driver's set-up helper: `(client, options)`, the name in
 * `table` (default `'worklease_leases'`), idempotent unless `ifNotExists: false`; an existing table
 * without the `listIndex` asked for is refused (add the index with `listIndexDefinition`), and one
 * being built is waited for until `ACTIVE`. Do not enable
 * DynamoDB's Time to Live on it: deleting an expired item would reset its workId's fencing tokens.
 *
 * ```ts
 * import { DynamoDBClient } from '@aws-sdk/client-dynamodb'
 * import { createLeaseTable, DynamoBackend } from '@worklease/dynamodb'
 *
 * const client = new DynamoDBClient({})
 * const backend = new DynamoBackend({ client, ...(await createLeaseTable(client, { table: 'leases' })) })
 * ```
 */
export async function createLeaseTable(
  client: DynamoClient,
  options: CreateLeaseTableOptions = {},
): Promise<CreatedLeaseTable> {
  if (typeof options !== 'object' || options === null) {
    throw new InvalidArgumentError('options must be an object')
  }
  const read = readOnce(
    options,
    ['table', 'partitionKey', 'ifNotExists', 'listIndex', 'timeoutMs', 'signal'],
    'options',
  ) as CreateLeaseTableOptions
  const {
    table: tableName = DEFAULT_LEASE_TABLE,
    partitionKey = 'workId',
    ifNotExists = true,
    listIndex,
    timeoutMs = 300_000,
    signal,
  } = read
  if (typeof client?.send !== 'function') throw new InvalidArgumentError('client must be a DynamoDBClient')
  validateTableName(tableName, 'options.table')
  validatePartitionKey(partitionKey)
  validateListIndex(listIndex)
  if (typeof ifNotExists !== 'boolean')
    throw new InvalidArgumentError('options.ifNotExists must be a boolean')
  // NaN would make the deadline never come: a table that never turns ACTIVE would be polled forever.
  if (typeof timeoutMs !== 'number' || !Number.isFinite(timeoutMs) || timeoutMs < 0) {
    throw new InvalidArgumentError(
      `options.timeoutMs must be a finite number of ms, got ${typeof timeoutMs === 'number' ? timeoutMs : typeof timeoutMs}`,
    )
  }
  // The check every backend call makes: an AbortSignal, and an aborted one throws its reason now. Its
  // answer is the signal used from here on (a lookalike's own, read once), never the caller's again.
  const { signal: checked } = validateCallOptions({ signal })
  const sendOptions = optionsOf(checked)
  const send = <T>(command: Parameters<DynamoClient['send']>[0]): Promise<T> =>
    raceAbort(client.send(command, sendOptions), checked)
  try {
    const create = new CreateTableCommand({
      TableName: tableName,
      AttributeDefinitions: [
        { AttributeName: partitionKey, AttributeType: 'S' },
        ...(listIndex === undefined ? [] : [{ AttributeName: Attr.listKey, AttributeType: 'S' as const }]),
      ],
      KeySchema: [{ AttributeName: partitionKey, KeyType: 'HASH' }],
      BillingMode: 'PAY_PER_REQUEST',
      ...(listIndex === undefined
        ? {}
        : { GlobalSecondaryIndexes: [listIndexDefinition(listIndex, partitionKey)] }),
    })
    // Where an existing table is an error, one attempt: the SDK's retry of a create that landed but
    // whose reply was lost would find the table it made and say it existed.
    await send(ifNotExists ? create : singleAttempt(create))
  } catch (error) {
    // DynamoDB says ResourceInUseException both for an existing table and one being created.
    if (!(ifNotExists && error instanceof Error && error.name === 'ResourceInUseException')) throw error
  }
  const deadline = Date.now() + timeoutMs
  for (let delayMs = 20; ; delayMs = Math.min(delayMs * 2, 2_000)) {
    const { Table } = await send<{ Table?: DescribedTable }>(
      new DescribeTableCommand({ TableName: tableName }),
    )
    const index = Table?.GlobalSecondaryIndexes?.find((candidate) => candidate.IndexName === listIndex)
    if (Table?.TableStatus === 'ACTIVE') {
      refuseOtherKey(tableName, partitionKey, Table)
      refuseListKeyOfOtherType(tableName, Table)
    }
    if (Table?.TableStatus === 'ACTIVE' && listIndex !== undefined) {
      refuseOtherIndex(tableName, partitionKey, listIndex, index)
    }
    // An index being added is built from every item first (CREATING); one UPDATING still answers.
    const indexReady = index === undefined || (index.IndexStatus ?? 'ACTIVE') !== 'CREATING'
    if (Table?.TableStatus === 'ACTIVE' && indexReady) {
      return { table: tableName, partitionKey, ...(listIndex === undefined ? {} : { listIndex }) }
    }
    if (Date.now() + delayMs > deadline) {
      throw new Error(
        Table?.TableStatus === 'ACTIVE'
          ? `the index ${JSON.stringify(listIndex)} of table ${tableName} is still being built (CREATING) after ${timeoutMs} ms: on a big table give createLeaseTable a longer timeoutMs`
          : `table ${tableName} is still ${Table?.TableStatus} after ${timeoutMs} ms`,
      )
    }
    await pause(delayMs, checked)
  }
}

interface DescribedTable {
  readonly TableStatus?: string
  readonly KeySchema?: readonly { readonly AttributeName?: string; readonly KeyType?: string }[]
  readonly AttributeDefinitions?: readonly {
    readonly AttributeName?: string
    readonly AttributeType?: string
  }[]
  readonly GlobalSecondaryIndexes?: readonly ListIndexDescription[]
}

/**
 * Throws unless an existing table is keyed as the backend writes: `partitionKey` alone, a string.
 * Another key (a sort key, a number, another name) passed as the table asked for, and every lease
 * call then failed with DynamoDB's ValidationException.
 */
function refuseOtherKey(tableName: string, partitionKey: string, table: DescribedTable): void {
  if (table.KeySchema === undefined) return
  const keys = table.KeySchema.map((key) => `${key.AttributeName} ${key.KeyType}`).join(', ')
  const type = table.AttributeDefinitions?.find((a) => a.AttributeName === partitionKey)?.AttributeType
  if (keys === `${partitionKey} HASH` && (type === undefined || type === 'S')) return
  throw new Error(
    `table ${tableName} is keyed ${keys}${type && type !== 'S' ? ` (${partitionKey} of type ${type})` : ''}, not ${partitionKey} HASH (a string): ` +
      'every lease call would fail; give createLeaseTable the partitionKey of the table, or use another table',
  )
}

/**
 * Throws when an index of the table keys `listKey` as anything but a string: every acquire writes it
 * as one, and each was then refused with a ValidationException, the list index asked for or not.
 */
function refuseListKeyOfOtherType(tableName: string, table: DescribedTable): void {
  const type = table.AttributeDefinitions?.find((a) => a.AttributeName === Attr.listKey)?.AttributeType
  if (type === undefined || type === 'S') return
  throw new Error(
    `an index of table ${tableName} keys ${Attr.listKey} as type ${type}: every acquire writes it as a string (S) and would be refused; drop that index, or use another table`,
  )
}

interface ListIndexDescription {
  readonly IndexName?: string
  readonly IndexStatus?: string
  readonly KeySchema?: readonly { readonly AttributeName?: string; readonly KeyType?: string }[]
  readonly Projection?: { readonly ProjectionType?: string; readonly NonKeyAttributes?: readonly string[] }
}

/**
 * Throws unless the table's index named `listIndex` is the one `list` queries (`listKey`, then the
 * partition key). Missing, or keyed otherwise (added with another partition key's definition, it
 * holds nothing), the backend made from the answer would declare `list` and list nothing.
 */
function refuseOtherIndex(
  tableName: string,
  partitionKey: string,
  listIndex: string,
  index: ListIndexDescription | undefined,
): void {
  const add =
    `add it with UpdateTable: AttributeDefinitions: [{ AttributeName: '${Attr.listKey}', AttributeType: 'S' }, ` +
    `{ AttributeName: ${JSON.stringify(partitionKey)}, AttributeType: 'S' }], GlobalSecondaryIndexUpdates: ` +
    `[{ Create: listIndexDefinition(${JSON.stringify(listIndex)}, ${JSON.stringify(partitionKey)}) }]`
  if (index === undefined) {
    throw new Error(
      `table ${tableName} exists without the list index ${JSON.stringify(listIndex)}: ${add}, or leave listIndex out`,
    )
  }
  const keys = (index.KeySchema ?? []).map((key) => `${key.AttributeName} ${key.KeyType}`).join(', ')
  if (keys !== `${Attr.listKey} HASH, ${partitionKey} RANGE`) {
    throw new Error(
      `the index ${JSON.stringify(listIndex)} of table ${tableName} is keyed ${keys}, not ${Attr.listKey} HASH, ${partitionKey} RANGE: list would find nothing in it; drop it and ${add}`,
    )
  }
  // What list reads of each lease: without it every list failed, or reported no checkpoint size.
  const { ProjectionType: type, NonKeyAttributes: projected = [] } = index.Projection ?? {}
  const missing =
    type === undefined || type === 'ALL'
      ? []
      : LIST_INDEX_ATTRIBUTES.filter((name) => type !== 'INCLUDE' || !projected.includes(name))
  if (missing.length > 0) {
    throw new Error(
      `the index ${JSON.stringify(listIndex)} of table ${tableName} projects ${type}${type === 'INCLUDE' ? ` without ${missing.join(', ')}` : ''}: list reads ${LIST_INDEX_ATTRIBUTES.join(', ')} from it; drop it and ${add}`,
    )
  }
}

/** Waits `ms`, or rejects with `signal`'s reason when it fires first; keeps no listener either way. */
function pause(ms: number, signal: AbortSignal | undefined): Promise<void> {
  if (!signal) return new Promise((resolve) => setTimeout(resolve, ms))
  signal.throwIfAborted()
  return new Promise<void>((resolve, reject) => {
    const onAbort = () => {
      clearTimeout(timer)
      reject(signal.reason)
    }
    const timer = setTimeout(() => {
      signal.removeEventListener('abort', onAbort)
      resolve()
    }, ms)
    signal.addEventListener('abort', onAbort, { once: true })
  })
}
