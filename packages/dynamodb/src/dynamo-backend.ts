import {
  type AttributeValue,
  BatchExecuteStatementCommand,
  BatchGetItemCommand,
  GetItemCommand,
  QueryCommand,
  UpdateItemCommand,
} from '@aws-sdk/client-dynamodb'
import {
  type AcquireArgs,
  type AcquiredWithCheckpoint,
  type Backend,
  type BackendCapabilities,
  type CallOptions,
  type CheckpointOptions,
  type CheckpointRead,
  type Clock,
  checkClock,
  compareWorkIds,
  createLeaseRecord,
  FencedError,
  InvalidArgumentError,
  LeaseExpiredError,
  LeaseHeldError,
  type LeaseListing,
  type LeasePage,
  type LeaseRecord,
  type ListOptions,
  leaseHeldBy,
  MAX_FENCING_TOKEN,
  type RecordArgs,
  type RenewOutcome,
  type RevokeOptions,
  raceAbort,
  readClock,
  readOnce,
  recordExpiresAtMs,
  systemClock,
  TokensExhaustedError,
  type ValidatedCallOptions,
  validateAcquireArgs,
  validateCheckpointArgs,
  validateListArgs,
  validateRecordArgs,
  validateRenewArgs,
  validateRenewManyArgs,
  validateRevokeArgs,
} from '@worklease/spec'
import type { DynamoClient } from './dynamo-client.js'
import {
  Attr,
  isTableName,
  LIST_KEY,
  stateBytesLimit,
  validateListIndex,
  validatePartitionKey,
  validateTableName,
} from './lease-item.js'
import { sendOptions, singleAttempt } from './single-attempt.js'

/** Options of {@link DynamoBackend}. */
export interface DynamoBackendOptions {
  /**
   * Your low-level `DynamoDBClient` (not the document client). Its retry settings do not matter to
   * this backend: every request it sends is a single attempt (see the README).
   *
   * ```ts
   * const backend = new DynamoBackend({ client: new DynamoDBClient({}), table: 'leases' })
   * ```
   */
  client: DynamoClient
  /**
   * The table, with a string partition key named {@link DynamoBackendOptions.partitionKey} and no
   * sort key; `createLeaseTable` makes one. Its name (3 to 255 of A-Z a-z 0-9 _ . -) or its ARN; any
   * other string is an `InvalidArgumentError` at construction, as DynamoDB would refuse it.
   *
   * ```ts
   * const backend = new DynamoBackend({ client, table: 'prod-leases' })
   * ```
   */
  table: string
  /**
   * Name of the table's partition key attribute, which holds the workId. Default: `'workId'`.
   *
   * ```ts
   * const backend = new DynamoBackend({ client, table: 'shared', partitionKey: 'pk' })
   * ```
   */
  partitionKey?: string
  /**
   * The clock that decides expiry (DynamoDB has no server-side "now" in expressions, so every
   * process uses its own: keep hosts in sync and ttls well above the worst skew). Default: `Date.now`.
   * A reading that is no time (NaN, an infinity) fails the call with a `RangeError`, sending nothing.
   *
   * ```ts
   * const backend = new DynamoBackend({ client, table: 'leases', clock: { now: () => Date.now() } })
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
   * const backend = new DynamoBackend({ client, table: 'leases', returnValuesOnConditionCheckFailure: false })
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
   * const backend = new DynamoBackend({ client, table: 'leases', maxStateBytes: 64 * 1024 })
   * ```
   */
  maxStateBytes?: number
  /**
   * The table's list index (`createLeaseTable`'s `listIndex`, or `listIndexDefinition` added with
   * `UpdateTable`). With it, `capabilities.list` is `true` and each `list` page is one `Query` of the
   * index. Without it, `list` throws: DynamoDB has no ordered read of partition keys, and a Scan
   * returns hash order, so no page could be one request. Reads of an index are eventually consistent
   * (see the README). Default: none.
   *
   * ```ts
   * const backend = new DynamoBackend({ client, table: 'leases', listIndex: 'worklease-list' })
   * ```
   */
  listIndex?: string
  /**
   * Whether `renewMany` is declared: up to 25 leases renewed in one `BatchExecuteStatement` request
   * (PartiQL `UPDATE`s, each under its own condition, each with its own outcome), so a `Leaser`
   * holding many leases sends one request per 25 renewals instead of one per lease. DynamoDB and
   * DynamoDB Local run it; set `false` for a server without PartiQL (dynalite), and the `Leaser`
   * renews each lease with its own `UpdateItem`. PartiQL takes no table ARN, and a partition key
   * name holding a double quote cannot be named in it here: with either, it is not declared.
   * Default: `true`.
   *
   * ```ts
   * const backend = new DynamoBackend({ client, table: 'leases', renewMany: false })
   * ```
   */
  renewMany?: boolean
}

type Item = Record<string, AttributeValue>

/** The most statements DynamoDB takes in one `BatchExecuteStatement`. */
const RENEW_MANY_MAX_RECORDS = 25

const TRUE: AttributeValue = { BOOL: true }
const FALSE: AttributeValue = { BOOL: false }
const num = (value: number | bigint): AttributeValue => ({ N: String(value) })

// The attributes that decide whether a record is valid, and the names every expression uses.
const VALIDITY = '#tok = :tok AND #hld = :hld AND #rel = :false'

// This lease has stored no checkpoint with this sequence or a later one. The sequence is kept with the
// token that stored it, so acquire needs no reset: any other token (or none) means none stored yet.
const NEWER_SEQUENCE = '(attribute_not_exists(#ctok) OR #ctok <> :tok OR #cseq < :seq)'

// No valid holderId is empty, so once revoke writes it no record matches the lease again.
const REVOKED_HOLDER = ''

/**
 * A worklease backend on Amazon DynamoDB (or a compatible server): one item per workId, every
 * operation one conditional `UpdateItem` or one strongly consistent `GetItem`.
 *
 * ```ts
 * import { DynamoDBClient } from '@aws-sdk/client-dynamodb'
 * import { DynamoBackend } from '@worklease/dynamodb'
 *
 * const backend = new DynamoBackend({ client: new DynamoDBClient({}), table: 'leases' })
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
  readonly #listIndex: string | undefined
  /** The PartiQL statement renewMany sends once per record; undefined when renewMany is not declared. */
  readonly #renewStatement: string | undefined

  constructor(options: DynamoBackendOptions) {
    const {
      client,
      table,
      partitionKey = 'workId',
      clock = systemClock,
      listIndex,
      maxStateBytes: maxStateOption,
      returnValuesOnConditionCheckFailure = true,
      renewMany = true,
      oldTableName,
    } = readOptions(options)
    if (typeof client?.send !== 'function') throw new InvalidArgumentError('client must be a DynamoDBClient')
    if (table === undefined && oldTableName) {
      throw new InvalidArgumentError('options.tableName is now options.table, as in createLeaseTable')
    }
    validateTableName(table)
    validatePartitionKey(partitionKey)
    const checkedClock = checkClock(clock)
    validateListIndex(listIndex)
    const limit = stateBytesLimit(partitionKey)
    const maxStateBytes = maxStateOption ?? limit
    if (!Number.isSafeInteger(maxStateBytes) || maxStateBytes < 0 || maxStateBytes > limit) {
      throw new InvalidArgumentError(
        `maxStateBytes must be an integer in 0..${limit} (DynamoDB's item size limit)`,
      )
    }
    if (typeof returnValuesOnConditionCheckFailure !== 'boolean') {
      throw new InvalidArgumentError('returnValuesOnConditionCheckFailure must be a boolean')
    }
    this.#client = client
    this.#tableName = table
    this.#partitionKey = partitionKey
    this.#clock = checkedClock
    this.#returnOldOnFailure = returnValuesOnConditionCheckFailure
    this.#listIndex = listIndex
    if (typeof renewMany !== 'boolean') throw new InvalidArgumentError('renewMany must be a boolean')
    this.#renewStatement =
      renewMany && isTableName(table) && !partitionKey.includes('"')
        ? renewStatement(table, partitionKey)
        : undefined
    this.capabilities = Object.freeze({
      clock: 'client',
      maxStateBytes,
      crossConnectionAtomic: true,
      reportsHolder: true,
      acquireWithCheckpoint: true,
      list: this.#listIndex !== undefined,
      revoke: true,
      ...(this.#renewStatement ? { renewMany: Object.freeze({ maxRecords: RENEW_MANY_MAX_RECORDS }) } : {}),
    })
  }

  async acquire(
    workId: string,
    holderId: string,
    ttlMs: number,
    options?: CallOptions,
  ): Promise<LeaseRecord> {
    // Only the validated snapshot from here on: the caller's arguments are never read again.
    return (await this.#take(validateAcquireArgs(workId, holderId, ttlMs, options), false)).record
  }

  /** {@link acquire}, with the new item's state and handoff from the same UpdateItem (`ALL_NEW`). */
  async acquireWithCheckpoint(
    workId: string,
    holderId: string,
    ttlMs: number,
    options?: CallOptions,
  ): Promise<AcquiredWithCheckpoint> {
    const { record, item } = await this.#take(validateAcquireArgs(workId, holderId, ttlMs, options), true)
    return { record, checkpoint: checkpointOf(item) }
  }

  async #take(args: AcquireArgs, withCheckpoint: boolean): Promise<{ record: LeaseRecord; item: Item }> {
    const now = readClock(this.#clock)
    const expiresAtMs = now + args.ttlMs
    let output: { Attributes?: Item }
    try {
      output = await this.#send(
        new UpdateItemCommand({
          TableName: this.#tableName,
          Key: this.#key(args.workId),
          // Every operand is read from the item as it was before this update, so cleanHandoff gets
          // the previous lease's released mark; a new item has none, which counts as a clean start.
          // listKey on every acquire, index or not, so an index added later holds every lease
          // acquired since (the first write of any lease is an acquire).
          UpdateExpression:
            'SET #tok = if_not_exists(#tok, :zero) + :one, #hld = :hld, #exp = :exp, #rel = :false, ' +
            '#clean = if_not_exists(#rel, :true), #lk = :lk',
          // DynamoDB numbers do not overflow at 2^63: without the ceiling this would store token
          // 2^63, a lease no record can carry. The failure path tells the ceiling from a held lease.
          ConditionExpression:
            '(attribute_not_exists(#pk) OR #exp <= :now OR #rel = :true) AND ' +
            '(attribute_not_exists(#tok) OR #tok < :max)',
          ExpressionAttributeNames: {
            '#pk': this.#partitionKey,
            '#tok': Attr.token,
            '#hld': Attr.holder,
            '#exp': Attr.expiresAt,
            '#rel': Attr.released,
            '#clean': Attr.cleanHandoff,
            '#lk': Attr.listKey,
          },
          ExpressionAttributeValues: {
            ':lk': { S: LIST_KEY },
            ':zero': num(0),
            ':one': num(1),
            ':hld': { S: args.holderId },
            ':exp': num(expiresAtMs),
            ':now': num(now),
            ':max': num(MAX_FENCING_TOKEN),
            ':false': FALSE,
            ':true': TRUE,
          },
          // ALL_NEW carries the state as well; without the checkpoint, only what the update wrote.
          ReturnValues: withCheckpoint ? 'ALL_NEW' : 'UPDATED_NEW',
          ...this.#oldOnFailure(),
        }),
        args,
      )
    } catch (error) {
      if (!isConditionalCheckFailed(error)) throw error
      throw await this.#whyNotFree(args, now, error)
    }
    const item = output.Attributes ?? {}
    const token = item[Attr.token]?.N
    if (token === undefined) throw new Error('DynamoDB returned no fencing token from UpdateItem')
    // Straight from the number's decimal text: a JavaScript number would lose tokens above 2^53.
    return { record: createLeaseRecord(args.workId, args.holderId, BigInt(token), expiresAtMs), item }
  }

  /** Names a failed acquire from the item the condition saw (or, without it, one consistent read). */
  async #whyNotFree(args: AcquireArgs, now: number, cause: Error & { Item?: Item }): Promise<Error> {
    const item = cause.Item ?? (await this.#readItem(args.workId, args))
    const token = item?.[Attr.token]?.N
    let expiresAtMs = Number.NaN
    try {
      if (item) expiresAtMs = expiresAtMsOf(item, args.workId)
    } catch (error) {
      throw new TypeError((error as Error).message, { cause })
    }
    const holderId = item?.[Attr.holder]?.S
    // Read as LEASE_HELD, an item that failed the write's condition for its shape would keep every
    // waiter out.
    if (item) checkLeaseItem(item, args.workId, cause)
    const held = item?.[Attr.released]?.BOOL === false && expiresAtMs > now
    if (!held && token !== undefined && BigInt(token) >= MAX_FENCING_TOKEN) {
      return new TokensExhaustedError(undefined, { cause })
    }
    // Judged at the refused write's `now`: one that expired or was released by the time of the read
    // is still the lease that refused it (leaseHeldBy reports it expiring in 0 ms).
    if (token === undefined || holderId === undefined) return new LeaseHeldError(undefined, { cause })
    const fencingToken = BigInt(token)
    return leaseHeldBy(
      { holderId, fencingToken, expiresAtMs, expiresInMs: expiresAtMs - readClock(this.#clock) },
      cause,
    )
  }

  async checkpoint(
    record: LeaseRecord,
    state: Uint8Array,
    ttlMs: number,
    options?: CheckpointOptions,
  ): Promise<void> {
    const args = validateCheckpointArgs(record, state, ttlMs, this.capabilities.maxStateBytes, options)
    const expiresAtMs = readClock(this.#clock) + args.ttlMs
    const sequenceNames = {
      '#ctok': Attr.checkpointToken,
      '#cseq': Attr.checkpointSequence,
      '#sb': Attr.stateBytes,
    }
    // args.state is the validator's private copy: the SDK serializes later, and the caller may reuse
    // its buffer meanwhile. Its size goes with it, for a list index that must not carry the state.
    const storeValues = {
      ':st': { B: args.state },
      ':seq': num(args.sequence),
      ':sb': num(args.state.byteLength),
    }
    const extendValues = { ':exp': num(expiresAtMs) }
    // The happy path, in one write: a later sequence than this lease stored, and an expiry no earlier
    // than the stored one (expressions have no max(), so it is part of the condition; `<=` keeps a
    // repeat within the same millisecond one write).
    const outcome = await this.#updateIfValid(
      args,
      'SET #st = :st, #sb = :sb, #ctok = :tok, #cseq = :seq, #exp = :exp',
      `${NEWER_SEQUENCE} AND #exp <= :exp`,
      { '#st': Attr.state, '#exp': Attr.expiresAt, ...sequenceNames },
      { ...storeValues, ...extendValues },
    )
    if (outcome === 'written') return
    const stored = outcome[Attr.checkpointToken]?.N
    // Like an expiry that is no number (expiresAtMsOf): a sequence of this token that is no number
    // failed `#cseq < :seq` without any checkpoint having stored a later one. A broken item is a
    // store failure; read as "superseded" it would make every checkpoint of this lease a silent no-op.
    if (
      stored !== undefined &&
      BigInt(stored) === args.record.fencingToken &&
      !Number.isFinite(Number(outcome[Attr.checkpointSequence]?.N))
    ) {
      throw new TypeError(`lease item ${args.record.workId} has no ${Attr.checkpointSequence} number`)
    }
    const newer =
      stored === undefined ||
      BigInt(stored) !== args.record.fencingToken ||
      Number(outcome[Attr.checkpointSequence]?.N) < args.sequence
    const later = Number(outcome[Attr.expiresAt]?.N) >= expiresAtMs
    // While a record is valid its stored sequence and expiry only grow, so the item the condition
    // failed on (or read after it) has at least one of the two where this call wanted it.
    if (newer && !later) throw new Error('the lease item failed a condition it meets')
    if (!newer && later) return
    // One more conditional write does what is still missing: store the state (a renew moved the
    // expiry past ours) or extend (superseded by a later checkpoint, or a retry whose first attempt
    // landed). If its condition fails on a still-valid record, another call did it meanwhile.
    if (newer) {
      await this.#updateIfValid(
        args,
        'SET #st = :st, #sb = :sb, #ctok = :tok, #cseq = :seq',
        NEWER_SEQUENCE,
        { '#st': Attr.state, ...sequenceNames },
        storeValues,
      )
    } else {
      await this.#updateIfValid(
        args,
        'SET #exp = :exp',
        '#exp <= :exp',
        { '#exp': Attr.expiresAt },
        extendValues,
      )
    }
  }

  async renew(record: LeaseRecord, ttlMs: number, options?: CallOptions): Promise<void> {
    const args = validateRenewArgs(record, ttlMs, options)
    const now = readClock(this.#clock)
    const expiresAtMs = now + args.ttlMs
    // `#exp <= :exp`: a late-landing or shorter renew never moves a live lease's expiry back. DynamoDB
    // has no max(), so an expiry already later fails the condition and counts as success below.
    const outcome = await this.#updateIfValid(
      args,
      'SET #exp = :exp',
      '#exp > :now AND #exp <= :exp',
      { '#exp': Attr.expiresAt },
      { ':exp': num(expiresAtMs), ':now': num(now) },
    )
    if (outcome === 'written') return
    // Valid, so only the expiry failed the condition: already later (success), or expired.
    if (expiresAtMsOf(outcome, args.record.workId) >= expiresAtMs) return
    throw new LeaseExpiredError()
  }

  /**
   * Renews up to 25 of one holder's leases in one `BatchExecuteStatement`: per record a PartiQL
   * `UPDATE` under the renew's own condition (valid, unexpired, expiry not later than the new one),
   * answered one by one. A condition that failed comes back with the item where the server returns
   * it (`ALL_OLD`; a failure without one then had no item: fenced); a server that returned none
   * gets one `BatchGetItem` of the refused records. Valid with a later
   * expiry is renewed (the max rule), valid and expired is expired, anything else fenced. Any other
   * error of a statement (throttling, say) fails the whole call, as a store failure: renewing again
   * is harmless.
   */
  async renewMany(
    records: readonly LeaseRecord[],
    ttlMs: number,
    options?: CallOptions,
  ): Promise<RenewOutcome[]> {
    const statement = this.#renewStatement
    if (statement === undefined) throw new TypeError('renewMany is off: the backend declares no renewMany')
    const args = validateRenewManyArgs(records, ttlMs, RENEW_MANY_MAX_RECORDS, options)
    if (args.records.length === 0) return []
    const now = readClock(this.#clock)
    const expiresAtMs = now + args.ttlMs
    const output: { Responses?: { Error?: { Code?: string; Message?: string; Item?: Item } }[] } =
      await this.#send(
        new BatchExecuteStatementCommand({
          Statements: args.records.map((record) => ({
            Statement: statement,
            Parameters: [
              num(expiresAtMs),
              { S: record.workId },
              num(record.fencingToken),
              { S: record.holderId },
              FALSE,
              num(now),
              num(expiresAtMs),
            ],
            ...this.#oldOnFailure(),
          })),
        }),
        args,
      )
    const responses = output.Responses ?? []
    if (responses.length !== args.records.length) {
      throw new Error(
        `worklease dynamodb: ${responses.length} responses to ${args.records.length} statements`,
      )
    }
    const outcomes: (RenewOutcome | undefined)[] = new Array(responses.length)
    // A server that returned one failed statement's item honours ALL_OLD: a failure without one had
    // no item at all. Otherwise (dynalite ignores it) the refused records are read.
    const itemsReturned = responses.some((response) => response.Error?.Item !== undefined)
    const unread: number[] = []
    for (let index = 0; index < responses.length; index++) {
      const error = responses[index]!.Error
      if (error === undefined) {
        outcomes[index] = 'renewed'
      } else if (error.Code !== 'ConditionalCheckFailed') {
        throw new Error(`worklease dynamodb: renewMany statement failed: ${error.Code}: ${error.Message}`)
      } else if (error.Item) {
        outcomes[index] = renewOutcome(error.Item, args.records[index]!, expiresAtMs)
      } else if (itemsReturned) {
        outcomes[index] = 'fenced'
      } else {
        unread.push(index)
      }
    }
    if (unread.length > 0) {
      // No item in any failed reply: missing (fenced), or a server that ignores ALL_OLD. One read tells.
      const items = await this.#readItems(
        unread.map((index) => args.records[index]!.workId),
        args,
      )
      for (const index of unread) {
        const record = args.records[index]!
        const item = items.get(record.workId)
        outcomes[index] = item ? renewOutcome(item, record, expiresAtMs) : 'fenced'
      }
    }
    return outcomes as RenewOutcome[]
  }

  async release(record: LeaseRecord, options?: CallOptions): Promise<void> {
    const args = validateRecordArgs(record, options)
    // The released mark frees the lease for every clock; the past expiry is for readers of the table.
    // An update expression has no min(): the record's expiry is never later than the stored one (only
    // renewals move it, and only forward), so a release that comes late keeps the earlier expiry. Read
    // as the record was made: its Date is the caller's to change.
    const past = Math.min(readClock(this.#clock) - 1, recordExpiresAtMs(args.record))
    await this.#updateIfValid(
      args,
      'SET #rel = :true, #exp = :past',
      undefined,
      { '#exp': Attr.expiresAt },
      { ':true': TRUE, ':past': num(past) },
    )
  }

  async readCheckpoint(record: LeaseRecord, options?: CallOptions): Promise<CheckpointRead> {
    const args = validateRecordArgs(record, options)
    const output: { Item?: Item } = await this.#send(
      new GetItemCommand({
        TableName: this.#tableName,
        Key: this.#key(args.record.workId),
        ConsistentRead: true,
        ProjectionExpression: '#tok, #hld, #rel, #clean, #st',
        ExpressionAttributeNames: this.#validityNames({ '#clean': Attr.cleanHandoff, '#st': Attr.state }),
      }),
      args,
    )
    const item = output.Item
    if (item) checkLeaseItem(item, args.record.workId)
    if (!item || !isValid(item, args.record)) throw new FencedError()
    return checkpointOf(item)
  }

  /**
   * One `Query` of the list index a page: `listKey = 'lease' AND begins_with(workId, prefix)`,
   * starting after the cursor (`ExclusiveStartKey`), `Limit` one more than the page so the extra item
   * says whether a next page exists. DynamoDB orders the sort key by UTF-8 bytes: code point order.
   * The index projects no state, only its size. Eventually consistent: index reads cannot be strong.
   */
  async list(options?: ListOptions): Promise<LeasePage> {
    const args = validateListArgs(options)
    if (this.#listIndex === undefined) {
      throw new TypeError(
        'DynamoBackend.list needs a list index: create the table with createLeaseTable({ listIndex }) ' +
          '(or add listIndexDefinition(name) with UpdateTable) and pass listIndex to the backend',
      )
    }
    const { prefix, cursor, limit } = args
    const now = readClock(this.#clock)
    // DynamoDB refuses a start key outside the key condition. A cursor before the prefix starts at
    // its first lease; one after every id with the prefix leaves nothing to read.
    const startAfter = cursor?.startsWith(prefix) ? cursor : undefined
    if (cursor !== undefined && startAfter === undefined && compareWorkIds(cursor, prefix) > 0) {
      return { leases: [], now: new Date(now) }
    }
    let output: { Items?: Item[]; LastEvaluatedKey?: Item }
    try {
      output = await this.#send(
        new QueryCommand({
          TableName: this.#tableName,
          IndexName: this.#listIndex,
          // begins_with of '' is not allowed; the whole index is the empty prefix.
          KeyConditionExpression: prefix === '' ? '#lk = :lk' : '#lk = :lk AND begins_with(#pk, :prefix)',
          ProjectionExpression: '#pk, #tok, #hld, #exp, #rel, #sb',
          ExpressionAttributeNames: {
            '#lk': Attr.listKey,
            '#pk': this.#partitionKey,
            '#tok': Attr.token,
            '#hld': Attr.holder,
            '#exp': Attr.expiresAt,
            '#rel': Attr.released,
            '#sb': Attr.stateBytes,
          },
          ExpressionAttributeValues: {
            ':lk': { S: LIST_KEY },
            ...(prefix === '' ? {} : { ':prefix': { S: prefix } }),
          },
          Limit: limit + 1,
          ...(startAfter === undefined
            ? {}
            : { ExclusiveStartKey: { [Attr.listKey]: { S: LIST_KEY }, ...this.#key(startAfter) } }),
        }),
        args,
      )
    } catch (error) {
      if (error instanceof Error && error.name === 'ValidationException' && /index/i.test(error.message)) {
        throw new TypeError(
          `the table ${this.#tableName} has no usable list index ${this.#listIndex}: ${error.message}`,
          { cause: error },
        )
      }
      throw error
    }
    const items = output.Items ?? []
    const leases = items.slice(0, limit).map((item) => this.#toListing(item, now))
    // A Query also stops at 1 MB read; then fewer than limit + 1 came back and more may follow.
    const more = items.length > limit || (output.LastEvaluatedKey !== undefined && leases.length > 0)
    return { leases, now: new Date(now), ...(more ? { cursor: leases.at(-1)!.workId } : {}) }
  }

  #toListing(item: Item, now: number): LeaseListing {
    const workId = item[this.#partitionKey]?.S
    const holderId = item[Attr.holder]?.S
    const token = item[Attr.token]?.N
    const expiresAtMs = Number(item[Attr.expiresAt]?.N)
    const released = item[Attr.released]?.BOOL
    const stateBytes = item[Attr.stateBytes]?.N
    if (
      workId === undefined ||
      holderId === undefined ||
      token === undefined ||
      // Not whole ms only: a client clock may read fractions (performance.timeOrigin + now()).
      !Number.isFinite(expiresAtMs) ||
      released === undefined
    ) {
      throw new TypeError(`malformed lease item in the list index: ${String(workId)}`)
    }
    return Object.freeze({
      workId,
      holderId,
      fencingToken: BigInt(token),
      expiresAt: new Date(expiresAtMs),
      released,
      free: released || expiresAtMs <= now,
      checkpointBytes: stateBytes === undefined ? null : Number(stateBytes),
    })
  }

  /**
   * One conditional `UpdateItem`: a live lease (not released, not revoked, not expired on this backend's clock)
   * gets holderId `''` and an expiry of now − 1. The old record's validity condition names its
   * holder, so it is FENCED everywhere; the next acquire finds the lease expired and copies
   * `released` (false) into cleanHandoff. The state stays. With `options.fencingToken` the condition
   * also names the token, so only that tenure can pass it.
   */
  async revoke(workId: string, options?: RevokeOptions): Promise<boolean> {
    const args = validateRevokeArgs(workId, options)
    const now = readClock(this.#clock)
    const expected = args.fencingToken
    try {
      await this.#send(
        new UpdateItemCommand({
          TableName: this.#tableName,
          Key: this.#key(args.workId),
          UpdateExpression: 'SET #hld = :revoked, #exp = :past',
          // A missing item fails it too: a comparison with a missing attribute is false. A lease revoked
          // before has no holder, though its now - 1 may still be ahead of this backend's clock.
          ConditionExpression:
            expected === undefined
              ? '#rel = :false AND #exp > :now AND #hld <> :revoked'
              : '#rel = :false AND #exp > :now AND #hld <> :revoked AND #tok = :tok',
          ExpressionAttributeNames: {
            '#hld': Attr.holder,
            '#exp': Attr.expiresAt,
            '#rel': Attr.released,
            ...(expected === undefined ? {} : { '#tok': Attr.token }),
          },
          ExpressionAttributeValues: {
            ':revoked': { S: REVOKED_HOLDER },
            ':past': num(now - 1),
            ':now': num(now),
            ':false': FALSE,
            ...(expected === undefined ? {} : { ':tok': num(expected) }),
          },
          ...this.#oldOnFailure(),
        }),
        args,
      )
      return true
    } catch (error) {
      if (!isConditionalCheckFailed(error)) throw error
      // An item of the wrong shape fails the condition too: that is no lease left alone. Told from the
      // item the reply carries; a revoke refused is one request, so none is read where no item came
      // (no item, or a server that ignores ALL_OLD: dynalite).
      if (error.Item) checkLeaseItem(error.Item, args.workId, error)
      return false
    }
  }

  /**
   * An `UpdateItem` that applies only while `args.record` is valid and `condition` holds. Resolves
   * `'written'`, or the item that failed the condition while the record is still valid (from the
   * reply, or one consistent read when the server sends none); a record no longer valid is
   * `FencedError`. Without `condition` it resolves `'written'` or throws `FencedError`. An item not of
   * this driver's shape is a `TypeError` either way (see `checkLeaseItem`).
   */
  async #updateIfValid(
    args: RecordArgs,
    updateExpression: string,
    condition: string | undefined,
    names: Record<string, string>,
    values: Item,
  ): Promise<'written' | Item> {
    const { record } = args
    try {
      await this.#send(
        new UpdateItemCommand({
          TableName: this.#tableName,
          Key: this.#key(record.workId),
          UpdateExpression: updateExpression,
          ConditionExpression: condition ? `${VALIDITY} AND ${condition}` : VALIDITY,
          ExpressionAttributeNames: this.#validityNames(names),
          ExpressionAttributeValues: this.#validityValues(record, values),
          ...this.#oldOnFailure(),
        }),
        args,
      )
      return 'written'
    } catch (error) {
      if (!isConditionalCheckFailed(error)) throw error
      // No item in the reply also when the server ignores the parameter (dynalite does): read it then.
      // Even validity alone failing needs it: an item of the wrong shape fails it too.
      const item = error.Item ?? (await this.#readItem(record.workId, args))
      if (item) checkLeaseItem(item, record.workId, error)
      if (condition && item && isValid(item, record)) return item
      throw new FencedError(undefined, { cause: error })
    }
  }

  #oldOnFailure() {
    return this.#returnOldOnFailure ? { ReturnValuesOnConditionCheckFailure: 'ALL_OLD' as const } : {}
  }

  /** The item without its state, strongly consistent: only to name a failure, never to decide a write. */
  async #readItem(workId: string, args: ValidatedCallOptions): Promise<Item | undefined> {
    const output: { Item?: Item } = await this.#send(
      new GetItemCommand({
        TableName: this.#tableName,
        Key: this.#key(workId),
        ConsistentRead: true,
        ProjectionExpression: '#tok, #hld, #rel, #exp, #ctok, #cseq',
        ExpressionAttributeNames: this.#validityNames({
          '#exp': Attr.expiresAt,
          '#ctok': Attr.checkpointToken,
          '#cseq': Attr.checkpointSequence,
        }),
      }),
      args,
    )
    return output.Item
  }

  /** The items of `workIds` (at most 100), strongly consistent, by workId: only to name failures. */
  async #readItems(workIds: readonly string[], args: ValidatedCallOptions): Promise<Map<string, Item>> {
    const output: { Responses?: Record<string, Item[]>; UnprocessedKeys?: Record<string, unknown> } =
      await this.#send(
        new BatchGetItemCommand({
          RequestItems: {
            [this.#tableName]: {
              Keys: workIds.map((workId) => this.#key(workId)),
              ConsistentRead: true,
              ProjectionExpression: '#pk, #tok, #hld, #rel, #exp',
              ExpressionAttributeNames: this.#validityNames({
                '#pk': this.#partitionKey,
                '#exp': Attr.expiresAt,
              }),
            },
          },
        }),
        args,
      )
    if (output.UnprocessedKeys && Object.keys(output.UnprocessedKeys).length > 0) {
      throw new Error('worklease dynamodb: the read naming refused renewals came back unprocessed')
    }
    const items = new Map<string, Item>()
    for (const item of output.Responses?.[this.#tableName] ?? []) {
      const workId = item[this.#partitionKey]?.S
      if (workId !== undefined) items.set(workId, item)
    }
    return items
  }

  #send<
    T extends
      | UpdateItemCommand
      | GetItemCommand
      | QueryCommand
      | BatchExecuteStatementCommand
      | BatchGetItemCommand,
  >(command: T, args: ValidatedCallOptions) {
    const { signal } = args
    if (!signal) return this.#client.send(singleAttempt(command), sendOptions(undefined))
    // The SDK hears its abortSignal only once the request reaches its HTTP handler (after credentials
    // and signing), and rejects with an AbortError of its own: the race rejects with the caller's
    // reason as the signal fires, and the SDK still cancels the request.
    return raceAbort(this.#client.send(singleAttempt(command), { abortSignal: signal }), signal)
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

/**
 * Throws unless `item` has what every lease item this driver writes has: an integer token, a holder
 * and a released flag. One without (written by hand, or by something else) fails every condition for
 * that, not for a lease outcome: a store failure, never `FENCED`, `LEASE_HELD` or a revoke's `false`.
 */
function checkLeaseItem(item: Item, workId: string, cause?: unknown): void {
  const token = item[Attr.token]?.N
  if (
    token === undefined ||
    !/^\d+$/.test(token) ||
    item[Attr.holder]?.S === undefined ||
    item[Attr.released]?.BOOL === undefined
  ) {
    throw new TypeError(
      `the lease item of ${JSON.stringify(workId)} has no integer ${Attr.token}, ${Attr.holder} string or ${Attr.released} flag: not one this driver wrote`,
      { cause },
    )
  }
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

const OPTION_KEYS = [
  'client',
  'table',
  'tableName',
  'partitionKey',
  'clock',
  'listIndex',
  'maxStateBytes',
  'returnValuesOnConditionCheckFailure',
  'renewMany',
] as const

/** The backend's options, each read once: a getter or Proxy cannot answer a check and the backend apart. */
function readOptions(options: DynamoBackendOptions): DynamoBackendOptions & { oldTableName: boolean } {
  if (typeof options !== 'object' || options === null) throw new InvalidArgumentError('options are required')
  const read = readOnce(options, OPTION_KEYS, 'options') as DynamoBackendOptions & { tableName?: unknown }
  return { ...read, oldTableName: read.table === undefined && read.tableName !== undefined }
}

/**
 * A renewal's outcome from the item whose condition failed, as `renew` judges it: still `record`'s
 * lease with an expiry at least the new one is renewed (the max rule kept it), otherwise a valid
 * record failed only the expiry (expired), and anything else is fenced.
 */
function renewOutcome(item: Item, record: LeaseRecord, expiresAtMs: number): RenewOutcome {
  if (!isValid(item, record)) return 'fenced'
  // One item no expiry can be read from costs its own lease only (renew alone throws for it): thrown,
  // it would fail the batch, whose other renewals landed, and their leases with it.
  return Number(item[Attr.expiresAt]?.N) >= expiresAtMs ? 'renewed' : 'expired'
}

/**
 * A lease item's expiry. One that is no number failed every expiry condition without being expired:
 * a broken item is a store failure, never a lease outcome.
 */
function expiresAtMsOf(item: Item, workId: string): number {
  const expiresAtMs = Number(item[Attr.expiresAt]?.N)
  if (!Number.isFinite(expiresAtMs)) throw new TypeError(`lease item ${workId} has no expiresAt number`)
  return expiresAtMs
}

/**
 * The PartiQL `UPDATE` of one renewal, its parameters in this order: new expiry, workId, token,
 * holderId, false, now, new expiry. The partition key and table are quoted identifiers; the table
 * name's characters (letters, digits, `_`, `-`, `.`) need no escape.
 */
function renewStatement(table: string, partitionKey: string): string {
  const q = (name: string) => `"${name}"`
  return (
    `UPDATE ${q(table)} SET ${q(Attr.expiresAt)} = ? WHERE ${q(partitionKey)} = ? AND ` +
    `${q(Attr.token)} = ? AND ${q(Attr.holder)} = ? AND ${q(Attr.released)} = ? AND ` +
    `${q(Attr.expiresAt)} > ? AND ${q(Attr.expiresAt)} <= ?`
  )
}

/**
 * The checkpoint an item holds: its state (none: null) and whether its lease followed a release. The
 * state copied: the SDK decodes it into a view of a pooled 8 KiB slab, whose `.buffer` holds other
 * bytes (another reply's) and is reused.
 */
function checkpointOf(item: Item): CheckpointRead {
  const state = item[Attr.state]?.B
  return {
    state: state === undefined ? null : new Uint8Array(state),
    cleanHandoff: item[Attr.cleanHandoff]?.BOOL === true,
  }
}
