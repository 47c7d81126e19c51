import { InvalidArgumentError, MAX_ID_LENGTH } from '@worklease/spec'

/**
 * Attribute names of a lease item, besides the partition key. None is a DynamoDB reserved word, but
 * every expression still goes through `ExpressionAttributeNames` so the partition key name can be
 * anything.
 */
export const Attr = Object.freeze({
  token: 'fencingToken',
  holder: 'holderId',
  expiresAt: 'expiresAt',
  released: 'released',
  cleanHandoff: 'cleanHandoff',
  state: 'state',
  /** The token whose checkpoint stored `checkpointSequence`: any other token means none yet. */
  checkpointToken: 'checkpointToken',
  checkpointSequence: 'checkpointSequence',
  /** The size of `state` in bytes, written with it: a list index can carry it, never the state. */
  stateBytes: 'stateBytes',
  /**
   * The same value on every lease ({@link LIST_KEY}), written by acquire: the partition key of the
   * optional list index, whose sort key is the workId, so one Query reads leases in workId order.
   */
  listKey: 'listKey',
} as const)

/** The value of {@link Attr.listKey} on every lease item. */
export const LIST_KEY = 'lease'

/** The attributes a list index projects: what `list` reports, without the state. */
export const LIST_INDEX_ATTRIBUTES: readonly string[] = Object.freeze([
  Attr.token,
  Attr.holder,
  Attr.expiresAt,
  Attr.released,
  Attr.stateBytes,
])

/** DynamoDB's item size limit: 400 KB, counted in 1024-byte KB. */
export const MAX_ITEM_BYTES = 400 * 1024

// DynamoDB counts an item as the UTF-8 bytes of every attribute name plus each value: a string by its
// UTF-8 bytes, a number by about one byte per two significant digits plus one (at most 21), a
// boolean as 1 and binary by its length.
const MAX_ID_BYTES = MAX_ID_LENGTH * 3 // a UTF-16 code unit is at most 3 bytes of UTF-8 (a pair is 4)
const MAX_NUMBER_BYTES = 21
const BOOLEAN_BYTES = 1
// DynamoDB limits a key attribute's name to 255 bytes.
const MAX_KEY_NAME_BYTES = 255

const utf8Bytes = (text: string): number => Buffer.byteLength(text, 'utf8')

/**
 * The largest state that keeps a lease item within {@link MAX_ITEM_BYTES} when both ids have the
 * largest UTF-8 size they can have and the numbers have 38 significant digits.
 */
export function stateBytesLimit(partitionKey: string): number {
  const overhead =
    utf8Bytes(partitionKey) +
    MAX_ID_BYTES +
    utf8Bytes(Attr.holder) +
    MAX_ID_BYTES +
    utf8Bytes(Attr.token) +
    MAX_NUMBER_BYTES +
    utf8Bytes(Attr.expiresAt) +
    MAX_NUMBER_BYTES +
    utf8Bytes(Attr.released) +
    BOOLEAN_BYTES +
    utf8Bytes(Attr.cleanHandoff) +
    BOOLEAN_BYTES +
    utf8Bytes(Attr.checkpointToken) +
    MAX_NUMBER_BYTES +
    utf8Bytes(Attr.checkpointSequence) +
    MAX_NUMBER_BYTES +
    utf8Bytes(Attr.stateBytes) +
    MAX_NUMBER_BYTES +
    utf8Bytes(Attr.listKey) +
    utf8Bytes(LIST_KEY) +
    utf8Bytes(Attr.state)
  return MAX_ITEM_BYTES - overhead
}

/** Checks the partition key attribute name given to the backend or to `createLeaseTable`. */
export function validatePartitionKey(partitionKey: unknown): asserts partitionKey is string {
  if (typeof partitionKey !== 'string' || partitionKey.length === 0) {
    throw new InvalidArgumentError('partitionKey must be a non-empty string')
  }
  if (utf8Bytes(partitionKey) > MAX_KEY_NAME_BYTES) {
    throw new InvalidArgumentError(`partitionKey must be at most ${MAX_KEY_NAME_BYTES} bytes of UTF-8`)
  }
  if ((Object.values(Attr) as string[]).includes(partitionKey)) {
    throw new InvalidArgumentError(
      `partitionKey must not be '${partitionKey}': the lease item uses that attribute`,
    )
  }
}

/** Checks the name of the list index given to the backend or to `createLeaseTable`. */
export function validateListIndex(listIndex: unknown): asserts listIndex is string | undefined {
  if (listIndex === undefined) return
  if (typeof listIndex !== 'string' || !/^[A-Za-z0-9_.-]{3,255}$/.test(listIndex)) {
    throw new InvalidArgumentError('listIndex must be an index name: 3 to 255 of A-Z a-z 0-9 _ . -')
  }
}

// DynamoDB's rules for a table name, and for a table ARN (which it also takes in place of a name).
const TABLE_NAME = /^[A-Za-z0-9_.-]{3,255}$/
const TABLE_ARN = /^arn:[a-z0-9-]+:dynamodb:[a-z0-9-]*:[0-9]*:table\/[A-Za-z0-9_.-]{3,255}$/

/** Whether `table` is a table's name, not its ARN: PartiQL statements take only a name. */
export function isTableName(table: string): boolean {
  return TABLE_NAME.test(table)
}

/**
 * Checks a table name (3 to 255 of A-Z a-z 0-9 _ . -) or table ARN, as DynamoDB would at the first
 * request: nothing else reaches a request, or renewMany's PartiQL statement, where the name is quoted.
 */
export function validateTableName(tableName: unknown, name = 'table'): asserts tableName is string {
  if (typeof tableName !== 'string' || tableName.length === 0) {
    throw new InvalidArgumentError(`${name} must be a non-empty string`)
  }
  if (!TABLE_NAME.test(tableName) && !TABLE_ARN.test(tableName)) {
    throw new InvalidArgumentError(
      `${name} must be a table name (3 to 255 of A-Z a-z 0-9 _ . -) or a table ARN, got ${JSON.stringify(tableName.slice(0, 300))}`,
    )
  }
}
