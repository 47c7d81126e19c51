import { type AttributeValue, GetItemCommand, UpdateItemCommand } from '@aws-sdk/client-dynamodb'
import {
  type Backend,
  type BackendCapabilities,
  type CallOptions,
  type CheckpointRead,
  type Clock,
  createLeaseRecord,
  FencedError,
  InvalidArgumentError,
  LeaseExpiredError,
  LeaseHeldError,
  type LeaseRecord,
  systemClock,
  validateAcquireArgs,
  validateCheckpointArgs,
  validateRecordArgs,
  validateRenewArgs,
} from '@worklease/spec'
import type { DynamoClient } from './dynamo-client.js'
import { Attr, stateBytesLimit, validatePartitionKey, validateTableName } from './lease-item.js'
import { singleAttempt } from './single-attempt.js'

/** Options of {@link DynamoBackend}. */
export interface DynamoBackendOptions {
  /**
   * Your low-level `DynamoDBClient` (not the document client). Its retry settings do not matter to
   * this backend: every request it sends is a single attempt (see the README).
   *
   * ```ts
   * const backend = new DynamoBackend({ client: new DynamoDBClient({}), tableName: 'leases' })
   * ```
   */
  client: DynamoClient
  /**
   * The table, with a string partition key named {@link DynamoBackendOptions.partitionKey} and no
   * sort key; `createLeaseTable` makes one.
   *
   * ```ts
   * const backend = new DynamoBackend({ client, tableName: 'prod-leases' })
   * ```
   */
  tableName: string
  /**
   * Name of the table's partition key attribute, which holds the workId. Default: `'workId'`.
   *
   * ```ts
   * const backend = new DynamoBackend({ client, tableName: 'shared', partitionKey: 'pk' })
   * ```
   */
  partitionKey?: string
  /**
   * The clock that decides expiry (DynamoDB has no server-side "now" in expressions, so every
   * process uses its own: keep hosts in sync and ttls well above the worst skew). Default: `Date.now`.
   *
   * ```ts
   * const backend = new DynamoBackend({ client, tableName: 'leases', clock: { now: () => Date.now() } })
   * ```
   */
  clock?: Clock
  /**
   * Whether to ask for the item with a failed condition (`ReturnValuesOnConditionCheckFailure:
   * 'ALL_OLD'`), so a failed renew tells `FENCED` from `LEASE_EXPIRED` without a second request.
   * DynamoDB supports it. A server that ignores it (dynalite) stays correct: with no item in the reply
   * the backend reads the item once, as it always does with `false`. Set `false` for a server that
   * rejects the parameter. Default: `true`.
   *
   * ```ts
   * const backend = new DynamoBackend({ client, tableName: 'leases', returnValuesOnConditionCheckFailure: false })
   * ```
   */
  returnValuesOnConditionCheckFailure?: boolean
  /**
   * Largest checkpoint state in bytes. Default and upper bound: what keeps the whole item within
   * DynamoDB's 400 KB item limit with ids of the largest size (about 398 KB; see
   * `DynamoBackend.stateBytesLimit`). Larger states are refused with `InvalidArgumentError` before
   * any request.
   *
   * ```ts
   * const backend = new DynamoBackend({ client, tableName: 'leases', maxStateBytes: 64 * 1024 })
   * ```
   */
  maxStateBytes?: number
}

type Item = Record<string, AttributeValue>

const TRUE: AttributeValue = { BOOL: true }
const FALSE: AttributeValue = { BOOL: false }
const num = (value: number | bigint): AttributeValue => ({ N: String(value) })

// The attributes that decide whether a record is valid, and the names every expression uses.
const VALIDITY = '#tok = :tok AND #hld = :hld AND #rel = :false'

/**
 * A worklease backend on Amazon DynamoDB (or a compatible server): one item per workId, every
 * operation one conditional `UpdateItem` or one strongly consistent `GetItem`.
 *
 * ```ts
 * import { DynamoDBClient } from '@aws-sdk/client-dynamodb'
 * import { DynamoBackend } from '@worklease/dynamodb'
 *
 * const backend = new DynamoBackend({ client: new DynamoDBClient({}), tableName: 'leases' })
 * const record = await backend.acquire('invoice-42', 'worker-a', 30_000)
 * ```
 */
export class DynamoBackend implements Backend {
  /** The largest `maxStateBytes` a table whose partition key is named `partitionKey` allows. */
  static stateBytesLimit(partitionKey = 'workId'): number {
    validatePartitionKey(partitionKey)
    return stateBytesLimit(partitionKey)
  }

  readonly capabilities: BackendCapabilities
  readonly #client: DynamoClient
  readonly #tableName: string
  readonly #partitionKey: string
  readonly #clock: Clock
  readonly #returnOldOnFailure: boolean

  constructor(options: DynamoBackendOptions) {
    if (typeof options !== 'object' || options === null)
      throw new InvalidArgumentError('options are required')
    const { client, tableName, partitionKey = 'workId', clock = systemClock } = options
    if (typeof client?.send !== 'function') throw new InvalidArgumentError('client must be a DynamoDBClient')
    validateTableName(tableName)
    validatePartitionKey(partitionKey)
    if (typeof clock?.now !== 'function') throw new InvalidArgumentError('clock must have a now() method')
    const limit = stateBytesLimit(partitionKey)
    const maxStateBytes = options.maxStateBytes ?? limit
    if (!Number.isSafeInteger(maxStateBytes) || maxStateBytes < 0 || maxStateBytes > limit) {
      throw new InvalidArgumentError(
        `maxStateBytes must be an integer in 0..${limit} (DynamoDB's item size limit)`,
      )
    }
    this.#client = client
    this.#tableName = tableName
    this.#partitionKey = partitionKey
    this.#clock = clock
    this.#returnOldOnFailure = options.returnValuesOnConditionCheckFailure ?? true
    this.capabilities = Object.freeze({ clock: 'client', maxStateBytes, crossConnectionAtomic: true })
  }

  async acquire(
    workId: string,
    holderId: string,
    ttlMs: number,
    options?: CallOptions,
  ): Promise<LeaseRecord> {
    validateAcquireArgs(workId, holderId, ttlMs, options)
    const now = this.#clock.now()
    const expiresAtMs = now + ttlMs
    let output: { Attributes?: Item }
    try {
      output = await this.#send(
        new UpdateItemCommand({
          TableName: this.#tableName,
          Key: this.#key(workId),
          // Every operand is read from the item as it was before this update, so cleanHandoff gets
          // the previous lease's released mark; a new item has none, which counts as a clean start.
          UpdateExpression:
            'SET #tok = if_not_exists(#tok, :zero) + :one, #hld = :hld, #exp = :exp, #rel = :false, ' +
            '#clean = if_not_exists(#rel, :true)',
          ConditionExpression: 'attribute_not_exists(#pk) OR #exp <= :now OR #rel = :true',
          ExpressionAttributeNames: {
            '#pk': this.#partitionKey,
            '#tok': Attr.token,
            '#hld': Attr.holder,
            '#exp': Attr.expiresAt,
            '#rel': Attr.released,
            '#clean': Attr.cleanHandoff,
          },
          ExpressionAttributeValues: {
            ':zero': num(0),
            ':one': num(1),
            ':hld': { S: holderId },
            ':exp': num(expiresAtMs),
            ':now': num(now),
            ':false': FALSE,
            ':true': TRUE,
          },
          ReturnValues: 'UPDATED_NEW',
        }),
        options,
      )
    } catch (error) {
      if (isConditionalCheckFailed(error)) throw new LeaseHeldError(undefined, { cause: error })
      throw error
    }
    const token = output.Attributes?.[Attr.token]?.N
    if (token === undefined) throw new Error('DynamoDB returned no fencing token from UpdateItem')
    // Straight from the number's decimal text: a JavaScript number would lose tokens above 2^53.
    return createLeaseRecord(workId, holderId, BigInt(token), expiresAtMs)
  }

  async checkpoint(
    record: LeaseRecord,
    state: Uint8Array,
    ttlMs: number,
    options?: CallOptions,
  ): Promise<void> {
    validateCheckpointArgs(record, state, ttlMs, this.capabilities.maxStateBytes, options)
    // Copied now: the SDK serializes later, and the caller may reuse its buffer meanwhile.
    const copy = new Uint8Array(state)
    await this.#updateValid(
      record,
      'SET #st = :st, #exp = :exp',
      { '#st': Attr.state, '#exp': Attr.expiresAt },
      {
        ':st': { B: copy },
        ':exp': num(this.#clock.now() + ttlMs),
      },
      options,
    )
  }

  async renew(record: LeaseRecord, ttlMs: number, options?: CallOptions): Promise<void> {
    validateRenewArgs(record, ttlMs, options)
    const now = this.#clock.now()
    try {
      await this.#send(
        new UpdateItemCommand({
          TableName: this.#tableName,
          Key: this.#key(record.workId),
          UpdateExpression: 'SET #exp = :exp',
          ConditionExpression: `${VALIDITY} AND #exp > :now`,
          ExpressionAttributeNames: this.#validityNames({ '#exp': Attr.expiresAt }),
          ExpressionAttributeValues: this.#validityValues(record, {
            ':exp': num(now + ttlMs),
            ':now': num(now),
          }),
          ...(this.#returnOldOnFailure ? { ReturnValuesOnConditionCheckFailure: 'ALL_OLD' as const } : {}),
        }),
        options,
      )
    } catch (error) {
      if (!isConditionalCheckFailed(error)) throw error
      // The write decided nothing here: this only picks the error to throw.
      // No item in the reply also when the server ignores the parameter (dynalite does): read it then.
      const item = error.Item ?? (await this.#readValidity(record.workId, options))
      if (item && isValid(item, record)) throw new LeaseExpiredError(undefined, { cause: error })
      throw new FencedError(undefined, { cause: error })
    }
  }

  async release(record: LeaseRecord, options?: CallOptions): Promise<void> {
    validateRecordArgs(record, options)
    // The released mark frees the lease for every clock; the past expiry is for readers of the table.
    await this.#updateValid(
      record,
      'SET #rel = :true, #exp = :past',
      { '#exp': Attr.expiresAt },
      {
        ':true': TRUE,
        ':past': num(this.#clock.now() - 1),
      },
      options,
    )
  }

  async readCheckpoint(record: LeaseRecord, options?: CallOptions): Promise<CheckpointRead> {
    validateRecordArgs(record, options)
    const output: { Item?: Item } = await this.#send(
      new GetItemCommand({
        TableName: this.#tableName,
        Key: this.#key(record.workId),
        ConsistentRead: true,
        ProjectionExpression: '#tok, #hld, #rel, #clean, #st',
        ExpressionAttributeNames: this.#validityNames({ '#clean': Attr.cleanHandoff, '#st': Attr.state }),
      }),
      options,
    )
    const item = output.Item
    if (!item || !isValid(item, record)) throw new FencedError()
    const state = item[Attr.state]?.B
    return { state: state ?? null, cleanHandoff: item[Attr.cleanHandoff]?.BOOL === true }
  }

  /** An `UpdateItem` that applies only while `record` is valid, else `FencedError`. */
  async #updateValid(
    record: LeaseRecord,
    updateExpression: string,
    names: Record<string, string>,
    values: Item,
    options: CallOptions | undefined,
  ): Promise<void> {
    try {
      await this.#send(
        new UpdateItemCommand({
          TableName: this.#tableName,
          Key: this.#key(record.workId),
          UpdateExpression: updateExpression,
          ConditionExpression: VALIDITY,
          ExpressionAttributeNames: this.#validityNames(names),
          ExpressionAttributeValues: this.#validityValues(record, values),
        }),
        options,
      )
    } catch (error) {
      if (isConditionalCheckFailed(error)) throw new FencedError(undefined, { cause: error })
      throw error
    }
  }

  async #readValidity(workId: string, options: CallOptions | undefined): Promise<Item | undefined> {
    const output: { Item?: Item } = await this.#send(
      new GetItemCommand({
        TableName: this.#tableName,
        Key: this.#key(workId),
        ConsistentRead: true,
        ProjectionExpression: '#tok, #hld, #rel',
        ExpressionAttributeNames: this.#validityNames({}),
      }),
      options,
    )
    return output.Item
  }

  #send<T extends UpdateItemCommand | GetItemCommand>(command: T, options: CallOptions | undefined) {
    return this.#client.send(
      singleAttempt(command),
      options?.signal ? { abortSignal: options.signal } : undefined,
    )
  }

  #key(workId: string): Item {
    return { [this.#partitionKey]: { S: workId } }
  }

  #validityNames(names: Record<string, string>): Record<string, string> {
    return { '#tok': Attr.token, '#hld': Attr.holder, '#rel': Attr.released, ...names }
  }

  #validityValues(record: LeaseRecord, values: Item): Item {
    return { ':tok': num(record.fencingToken), ':hld': { S: record.holderId }, ':false': FALSE, ...values }
  }
}

function isConditionalCheckFailed(error: unknown): error is Error & { Item?: Item } {
  // By name rather than instanceof: the user's copy of the SDK may not be the one this package resolves.
  return error instanceof Error && error.name === 'ConditionalCheckFailedException'
}

function isValid(item: Item, record: LeaseRecord): boolean {
  const token = item[Attr.token]?.N
  return (
    token !== undefined &&
    BigInt(token) === record.fencingToken &&
    item[Attr.holder]?.S === record.holderId &&
    item[Attr.released]?.BOOL === false
  )
}
